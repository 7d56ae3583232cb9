//! Templates: a text with `{{name}}` placeholders parsed once, then bound to a feed's columns so that
//! rendering a row only copies text.

use std::borrow::Cow;

use super::{
    FeedError,
    rows::{Feed, Row},
};

/// One part of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Placeholder(String),
}

/// A text with `{{name}}` placeholders (a request's url, a header value, a body), parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The input field it came from (`requests[1].body`), which its errors name.
    field: String,
    text: String,
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text` of input field `field`. Refused: a `{{` that no `}}` closes, `{{}}`, and a name holding a
    /// brace (`{{{id}}}`).
    pub fn parse(field: impl Into<String>, text: &str) -> Result<Self, FeedError> {
        let field = field.into();
        let at = |byte: usize| text[..byte].chars().count() + 1;
        let mut parts = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            let inside = &rest[open + 2..];
            let Some(close) = inside.find("}}") else {
                return Err(FeedError::Unclosed {
                    field,
                    at: at(offset + open),
                });
            };
            let name = inside[..close].trim();
            if name.is_empty() {
                return Err(FeedError::EmptyPlaceholder {
                    field,
                    at: at(offset + open),
                });
            }
            if name.contains(['{', '}']) {
                return Err(FeedError::BracedPlaceholder {
                    field,
                    at: at(offset + open),
                    text: rest[open..open + 2 + close + 2].to_owned(),
                });
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            parts.push(Part::Placeholder(name.to_owned()));
            let consumed = open + 2 + close + 2;
            rest = &rest[consumed..];
            offset += consumed;
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            field,
            text: text.to_owned(),
            parts,
        })
    }

    pub fn field(&self) -> &str {
        &self.field
    }

    /// The column names its placeholders name, in order (a name used twice comes twice).
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Placeholder(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// True when it names no placeholder: it renders to its own text.
    pub fn is_literal(&self) -> bool {
        self.placeholders().next().is_none()
    }

    /// Its text, for a scenario without a feed: refused when it names a placeholder, which nothing would fill.
    pub fn without_feed(&self) -> Result<&str, FeedError> {
        match self.placeholders().next() {
            None => Ok(&self.text),
            Some(name) => Err(FeedError::NoFeed {
                field: self.field.clone(),
                name: name.to_owned(),
            }),
        }
    }
}

/// One part of a bound template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BoundPart {
    Literal(String),
    /// The index of a column of the feed it was bound to.
    Column(usize),
}

/// A [`Template`] whose placeholders are columns of one feed ([`Feed::bind`]): rendering copies text and
/// parses nothing. Render it only with rows of the feed it was bound to (another feed's rows give empty
/// values where the columns do not line up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundTemplate {
    parts: Vec<BoundPart>,
}

impl BoundTemplate {
    /// True when it names no placeholder: every row renders it to the same text.
    pub fn is_literal(&self) -> bool {
        !self
            .parts
            .iter()
            .any(|part| matches!(part, BoundPart::Column(_)))
    }

    /// The text for `row`. A text without placeholders, or that is one placeholder alone, is borrowed, not
    /// copied.
    pub fn render<'a>(&'a self, row: Row<'a>) -> Cow<'a, str> {
        match self.parts.as_slice() {
            [] => Cow::Borrowed(""),
            [BoundPart::Literal(text)] => Cow::Borrowed(text),
            [BoundPart::Column(column)] => Cow::Borrowed(row.feed.value(row.index, *column)),
            parts => {
                let len = parts
                    .iter()
                    .map(|part| self.part_text(part, row).len())
                    .sum();
                let mut out = String::with_capacity(len);
                self.render_into(row, &mut out);
                Cow::Owned(out)
            }
        }
    }

    /// Appends the text for `row` to `out` (e.g. a request being serialized).
    pub fn render_into(&self, row: Row<'_>, out: &mut String) {
        for part in &self.parts {
            out.push_str(self.part_text(part, row));
        }
    }

    fn part_text<'a>(&'a self, part: &'a BoundPart, row: Row<'a>) -> &'a str {
        match part {
            BoundPart::Literal(text) => text,
            BoundPart::Column(column) => row.feed.value(row.index, *column),
        }
    }
}

impl Feed {
    /// `template` ready to fill from this feed's rows; a placeholder naming no column, or a column some line
    /// lacks, is refused.
    pub fn bind(&self, template: &Template) -> Result<BoundTemplate, FeedError> {
        let parts = template
            .parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => Ok(BoundPart::Literal(text.clone())),
                Part::Placeholder(name) => self.column_for(template.field(), name),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BoundTemplate { parts })
    }

    /// [`Feed::bind`] for a header value: also refuses a column named whose value on some row holds a line break
    /// or another control character (tab aside), which would end the header or break the request.
    pub fn bind_header_value(&self, template: &Template) -> Result<BoundTemplate, FeedError> {
        let bound = self.bind(template)?;
        for part in &bound.parts {
            let BoundPart::Column(column) = *part else {
                continue;
            };
            let unfit = (0..self.rows()).find(|&row| {
                self.value(row, column)
                    .bytes()
                    .any(|b| (b < b' ' && b != b'\t') || b == 0x7f)
            });
            if let Some(row) = unfit {
                return Err(FeedError::UnfitHeaderValue {
                    field: template.field().to_owned(),
                    name: self.columns[column].clone(),
                    path: self.path.clone(),
                    line: u64::from(self.lines[row]),
                });
            }
        }
        Ok(bound)
    }

    fn column_for(&self, field: &str, name: &str) -> Result<BoundPart, FeedError> {
        let Some(column) = self.columns.iter().position(|c| c == name) else {
            return Err(FeedError::UnknownColumn {
                field: field.to_owned(),
                name: name.to_owned(),
                hint: crate::fields::closest(name, self.columns.iter().map(String::as_str))
                    .map(|close| format!("; did you mean {{{{{close}}}}}?"))
                    .unwrap_or_default(),
                path: self.path.clone(),
                columns: self.columns.join(", "),
            });
        };
        if let Some(line) = self.lacking[column] {
            return Err(FeedError::MissingValue {
                field: field.to_owned(),
                name: name.to_owned(),
                path: self.path.clone(),
                line: u64::from(line),
            });
        }
        Ok(BoundPart::Column(column))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::feed::test_feeds::*;

    #[test]
    fn templates_parse_once_and_text_without_placeholders_is_borrowed() {
        let parsed = template("requests[1].body", "a{{x}}b{{ y }}{{x}}");
        assert_eq!(parsed.placeholders().collect::<Vec<_>>(), ["x", "y", "x"]);
        assert!(!parsed.is_literal());
        let plain = template("requests[1].body", "{\"a\": {\"b\": 1}}");
        assert!(plain.is_literal());
        assert_eq!(plain.without_feed().unwrap(), "{\"a\": {\"b\": 1}}");
        assert_eq!(
            parsed.without_feed().unwrap_err().to_string(),
            "requests[1].body: the placeholder {{x}} needs a feed to fill it; add feed: {file, order} or write \
             the text without '{{'"
        );

        let feed = load("xy.csv", "x,y\n1,2\n").unwrap();
        let bound = feed.bind(&parsed).unwrap();
        assert_eq!(bound.render(feed.row(0)), "a1b21");
        let mut out = String::from("> ");
        bound.render_into(feed.row(0), &mut out);
        assert_eq!(out, "> a1b21");
        let literal = feed.bind(&plain).unwrap();
        assert!(literal.is_literal());
        assert!(matches!(literal.render(feed.row(0)), Cow::Borrowed(_)));
        let alone = feed.bind(&template("url", "{{y}}")).unwrap();
        assert!(matches!(alone.render(feed.row(0)), Cow::Borrowed("2")));
        assert_eq!(
            feed.bind(&template("url", "")).unwrap().render(feed.row(0)),
            ""
        );
        // A closing brace beside a placeholder is text: a JSON body's own braces stay.
        let json = feed
            .bind(&template("body", "{\"o\":{\"x\":{{x}}}}"))
            .unwrap();
        assert_eq!(json.render(feed.row(0)), "{\"o\":{\"x\":1}}");
    }

    #[test]
    fn malformed_placeholders_are_refused_naming_the_field_and_where() {
        let error = |text: &str| {
            Template::parse("requests[1].body", text)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error("héllo {{user"),
            "requests[1].body: the '{{' at character 7 opens a placeholder that no '}}' closes; a placeholder \
             is written {{column}}, and every '{{' opens one"
        );
        assert!(
            error("{{a}} and {{").contains("character 11"),
            "{}",
            error("{{a}} and {{")
        );
        assert_eq!(
            error("x{{ }}"),
            "requests[1].body: the placeholder at character 2 names no column; write it {{column}}, with a \
             column of the feed"
        );
        assert_eq!(
            error("{{{id}}}"),
            "requests[1].body: the placeholder at character 1 is '{{{id}}'; a column name between '{{' and '}}' \
             holds no brace"
        );
    }

    #[test]
    fn a_placeholder_naming_no_column_is_refused_with_the_columns() {
        let feed = load("users.csv", &users_csv(3)).unwrap();
        let error = feed
            .bind(&template("requests[1].headers.x-user", "{{nmae}}"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!(
                "requests[1].headers.x-user: the placeholder {{{{nmae}}}} names no column of the feed {}; did you \
                 mean {{{{name}}}}? (its columns: id, name)",
                feed.path().display()
            )
        );
        let error = feed
            .bind(&template("url", "http://h/{{zzz}}"))
            .unwrap_err()
            .to_string();
        let expected = format!(
            "names no column of the feed {} (its columns: id, name)",
            feed.path().display()
        );
        assert!(error.ends_with(&expected), "{error}");
    }

    #[test]
    fn a_header_value_refuses_a_value_with_a_line_break() {
        let feed = load("h.csv", "token,note\nabc,fine\n\"x\r\nInjected: 1\",ok\n").unwrap();
        let header = template("requests[0].headers.authorization", "Bearer {{token}}");
        // In a body the same value is fine.
        assert!(feed.bind(&header).is_ok());
        assert_eq!(
            feed.bind_header_value(&header).unwrap_err().to_string(),
            format!(
                "requests[0].headers.authorization: the placeholder {{{{token}}}} takes line 3 of {}'s value, which \
                 holds a line break or control character that a header value cannot hold",
                feed.path().display()
            )
        );
        let note = template("requests[0].headers.x-note", "{{note}}\t!");
        assert_eq!(
            feed.bind_header_value(&note).unwrap().render(feed.row(1)),
            "ok\t!"
        );
    }
}
