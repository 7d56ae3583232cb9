//! A plan's text to a JSON value, bounded first: its size and the nesting of its collections are checked in
//! one pass before the parser runs (a YAML parser takes quadratic time on deep nesting, minutes for a few
//! hundred kilobytes), and a YAML `.nan` or `.inf` is refused naming the fault, the key and the line (JSON
//! has no such numbers; converted as they are, they would turn into `null`).

use serde_json::Value;

use super::error::{FaultEntryError, InvalidPlan, PlanTextError};
use super::{MAX_NESTING, MAX_PLAN_BYTES, Syntax};

/// The plan's text as a JSON value.
pub(super) fn read(text: &str, syntax: Syntax) -> Result<Value, PlanTextError> {
    if text.len() as u64 > MAX_PLAN_BYTES {
        return Err(PlanTextError::TooLarge);
    }
    if let Some(line) = too_deep(text, MAX_NESTING) {
        return Err(PlanTextError::TooDeep { line });
    }
    match syntax {
        Syntax::Json => serde_json::from_str(text).map_err(|e| PlanTextError::Syntax {
            format: "JSON",
            message: e.to_string(),
        }),
        Syntax::Yaml => {
            let Lenient(yaml) =
                serde_yaml_ng::from_str(text).map_err(|e| PlanTextError::Syntax {
                    format: "YAML",
                    message: e.to_string(),
                })?;
            if let Some(error) = not_a_number(&yaml, text) {
                return Err(error.into());
            }
            serde_json::to_value(yaml).map_err(|e| PlanTextError::Syntax {
                format: "YAML",
                message: e.to_string(),
            })
        }
    }
}

/// A YAML value as serde_yaml_ng reads one, except that an integer beyond 64 bits, which its own value type
/// refuses (failing the whole plan as invalid YAML), is read as the float it rounds to, as JSON readers read
/// it: the key it is given to then refuses it with its own message (`seed: 18446744073709551616` is out of a
/// seed's range).
struct Lenient(serde_yaml_ng::Value);

impl<'de> serde::Deserialize<'de> for Lenient {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientVisitor).map(Lenient)
    }
}

struct LenientVisitor;

impl<'de> serde::de::Visitor<'de> for LenientVisitor {
    type Value = serde_yaml_ng::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(b.into())
    }

    fn visit_i64<E>(self, i: i64) -> Result<Self::Value, E> {
        Ok(i.into())
    }

    fn visit_u64<E>(self, u: u64) -> Result<Self::Value, E> {
        Ok(u.into())
    }

    fn visit_i128<E>(self, i: i128) -> Result<Self::Value, E> {
        Ok((i as f64).into())
    }

    fn visit_u128<E>(self, u: u128) -> Result<Self::Value, E> {
        Ok((u as f64).into())
    }

    fn visit_f64<E>(self, f: f64) -> Result<Self::Value, E> {
        Ok(f.into())
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(s.into())
    }

    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(s.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_yaml_ng::Value::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_yaml_ng::Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, inner: D) -> Result<Self::Value, D::Error> {
        inner.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Lenient(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(serde_yaml_ng::Value::Sequence(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut mapping = serde_yaml_ng::Mapping::new();
        while let Some(Lenient(key)) = map.next_key()? {
            if mapping.contains_key(&key) {
                let key = serde_yaml_ng::to_string(&key).unwrap_or_default();
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate entry with key {}",
                    key.trim_end()
                )));
            }
            let Lenient(value) = map.next_value()?;
            mapping.insert(key, value);
        }
        Ok(serde_yaml_ng::Value::Mapping(mapping))
    }

    /// A tagged value (`!tag value`).
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        use serde::de::VariantAccess;
        let (tag, contents) = data.variant::<String>()?;
        let Lenient(value) = contents.newtype_variant()?;
        Ok(serde_yaml_ng::Value::Tagged(Box::new(
            serde_yaml_ng::value::TaggedValue {
                tag: serde_yaml_ng::value::Tag::new(tag),
                value,
            },
        )))
    }
}

/// The line where the flow collections (`[`, `{`) of `text` nest deeper than `limit`, if they do. Quoted
/// strings and comments are skipped; a bracket counts where a value starts (or anywhere inside a flow
/// collection), as in YAML a plain scalar may hold brackets.
fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let (mut depth, mut line) = (0usize, 1usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    // The last character that is not a space, on this line ('\n' at its start), and the one just before.
    let (mut last, mut previous) = ('\n', '\n');
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let after_space = matches!(std::mem::replace(&mut previous, c), ' ' | '\t' | '\n');
        if c == '\n' {
            line += 1;
            comment = false;
            if quote.is_none() {
                last = '\n';
            }
            continue;
        }
        if comment {
            continue;
        }
        match quote {
            Some('"') => {
                if c == '\\' {
                    chars.next();
                } else if c == '"' {
                    quote = None;
                }
                continue;
            }
            Some(_) => {
                if c == '\'' && chars.next_if_eq(&'\'').is_none() {
                    quote = None;
                }
                continue;
            }
            None => {}
        }
        if c == ' ' || c == '\t' {
            continue;
        }
        // Inside a flow collection every bracket is one; outside, only where a block value starts.
        let value_starts = depth > 0 || matches!(last, '\n' | ':' | '-' | '?');
        match c {
            '#' if after_space => comment = true,
            '"' | '\'' if value_starts => quote = Some(c),
            '[' | '{' if value_starts => {
                depth += 1;
                if depth > limit {
                    return Some(line);
                }
            }
            ']' | '}' if depth > 0 => depth -= 1,
            _ => {}
        }
        last = c;
    }
    None
}

/// Where a YAML number is not finite (`.nan`, `.inf`), the plan's error naming it.
fn not_a_number(root: &serde_yaml_ng::Value, text: &str) -> Option<InvalidPlan> {
    use serde_yaml_ng::Value as Yaml;
    let entries: Option<&Vec<Yaml>> = match root {
        Yaml::Sequence(items) => Some(items),
        Yaml::Mapping(top) => {
            if let Some((key, got)) = top
                .iter()
                .filter(|(k, _)| k.as_str() != Some("faults"))
                .find_map(|(k, v)| non_finite(v).map(|(inner, got)| (inner.or(key_name(k)), got)))
            {
                let key = key.unwrap_or_default();
                return Some(InvalidPlan::NotANumber {
                    line: number_line(text, &key, got),
                    key,
                    got,
                });
            }
            top.get("faults").and_then(Yaml::as_sequence)
        }
        _ => None,
    };
    entries?.iter().enumerate().find_map(|(index, entry)| {
        let map = entry.as_mapping()?;
        let (key, got) = map
            .iter()
            .find_map(|(k, v)| non_finite(v).map(|(inner, got)| (inner.or(key_name(k)), got)))?;
        let key = key.unwrap_or_default();
        let fault = ["type", "kind"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Yaml::as_str))
            .unwrap_or("fault")
            .to_owned();
        Some(InvalidPlan::Fault {
            index,
            error: Box::new(FaultEntryError::NotANumber {
                line: number_line(text, &key, got),
                fault,
                key,
                got,
            }),
        })
    })
}

fn key_name(key: &serde_yaml_ng::Value) -> Option<String> {
    key.as_str().map(str::to_owned)
}

/// The first number in `value` that is not finite: the key holding it, when nested, and how YAML writes it.
fn non_finite(value: &serde_yaml_ng::Value) -> Option<(Option<String>, &'static str)> {
    use serde_yaml_ng::Value as Yaml;
    match value {
        Yaml::Number(n) => n.as_f64().and_then(|f| match f {
            f if f.is_nan() => Some((None, ".nan")),
            f if f == f64::INFINITY => Some((None, ".inf")),
            f if f == f64::NEG_INFINITY => Some((None, "-.inf")),
            _ => None,
        }),
        Yaml::Sequence(items) => items.iter().find_map(non_finite),
        Yaml::Mapping(map) => map
            .iter()
            .find_map(|(k, v)| non_finite(v).map(|(inner, got)| (inner.or(key_name(k)), got))),
        Yaml::Tagged(tagged) => non_finite(&tagged.value),
        _ => None,
    }
}

/// The line of `key` whose value is the non-finite number `got` (`.nan`, `.inf`: any case, any sign).
fn number_line(text: &str, key: &str, got: &str) -> Option<usize> {
    let spelling = got.trim_start_matches('-').trim_start_matches('.');
    key_line_where(text, key, |rest| {
        rest.to_ascii_lowercase().contains(spelling)
    })
    .or_else(|| key_line(text, key))
}

/// The line where `key` is first written in `source` (a mapping key in YAML or JSON).
pub(super) fn key_line(source: &str, key: &str) -> Option<usize> {
    key_line_where(source, key, |_| true)
}

/// The first line where `key` is written as a mapping key and what follows it satisfies `value`.
pub(super) fn key_line_where(
    source: &str,
    key: &str,
    value: impl Fn(&str) -> bool,
) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    source
        .lines()
        .position(|line| {
            line.match_indices(key).any(|(start, _)| {
                let before = line[..start].chars().next_back();
                let after = &line[start + key.len()..];
                let after = after
                    .strip_prefix(['"', '\''])
                    .unwrap_or(after)
                    .trim_start();
                before.is_none_or(|c| matches!(c, ' ' | '-' | '{' | ',' | '"' | '\'' | '\t'))
                    && (after.starts_with(':') || line[..start].trim_end().ends_with(':'))
                    && value(after)
            })
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_reads_as_serde_yaml_ng_reads_it_and_integers_past_64_bits_as_floats() {
        let text = "a: [1, -2, 2.5, x, true, null, ~]\nb: {c: !t 3}\nd: 18446744073709551616\ne: -9223372036854775809\n";
        let value = read(text, Syntax::Yaml).unwrap();
        // serde_yaml_ng's own value, the two large integers made small.
        let small = text.replace("d: 1", "d: 0").replace("e: -9", "e: -0");
        let mut expected =
            serde_json::to_value(serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&small).unwrap())
                .unwrap();
        expected["d"] = 18446744073709551616.0.into();
        expected["e"] = (-9223372036854775809.0).into();
        assert_eq!(value, expected);
        let error = read("a: 1\na: 2\n", Syntax::Yaml).unwrap_err().to_string();
        assert!(error.contains("duplicate entry with key a"), "{error}");
    }

    #[test]
    fn nesting_counts_collections_not_brackets_in_strings_or_plain_text() {
        assert_eq!(too_deep("a: [[[1]]]\n", 2), Some(1));
        assert_eq!(too_deep("a: [[1]]\nb: {c: [d]}\n", 2), None);
        assert_eq!(too_deep("a: 'x [[[' # [[[\n", 1), None);
        assert_eq!(too_deep("b: \"[[[\\\"[[[\"\n", 1), None);
        assert_eq!(too_deep("c: it's [[[ up\n", 1), None);
        assert_eq!(
            too_deep("faults:\n  - {type: x, tools: [[[a]]]}\n", 3),
            Some(2)
        );
        let deep = "x: [".repeat(100);
        assert_eq!(too_deep(&deep, MAX_NESTING), Some(1));
    }
}
