//! What logs and errors show of a URL: no credentials, query string or fragment (an API key often travels in
//! one of them).

/// `url` without credentials, query string or fragment: what logs and errors show of a URL.
pub fn redacted_url(url: &url::Url) -> url::Url {
    let mut url = url.clone();
    let _ = url.set_password(None);
    let _ = url.set_username("");
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// [`redacted_url`] as text.
pub fn redacted(url: &url::Url) -> String {
    redacted_url(url).to_string()
}

/// `text` with every URL in it redacted, e.g. a library's error that quotes the address it was given.
pub fn redacted_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || "\"'<>()[]{}`".contains(c))
            .map_or(rest.len(), |i| at + i);
        // Punctuation that ends a sentence or a message part is not part of the URL.
        let end = scheme_start
            .max(at + 3)
            .max(rest[..end].trim_end_matches([':', ',', '.', ';']).len());
        out.push_str(&rest[..scheme_start]);
        let candidate = &rest[scheme_start..end];
        match url::Url::parse(candidate) {
            // Only a URL with something to hide is rewritten (parsing alone would add a trailing `/`).
            Ok(url)
                if scheme_start < at
                    && (!url.username().is_empty()
                        || url.password().is_some()
                        || url.query().is_some()
                        || url.fragment().is_some()) =>
            {
                out.push_str(&redacted(&url))
            }
            _ => out.push_str(candidate),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_drops_credentials_query_and_fragment() {
        let url = url::Url::parse("https://user:s3cret@host:8443/v1?key=k3y#frag").unwrap();
        assert_eq!(redacted(&url), "https://host:8443/v1");
        assert_eq!(redacted_text("not a url"), "not a url");
        assert_eq!(
            redacted_text(
                "Failed to connect to http://u:pw@127.0.0.1:1/?api-key=k: refused (see https://a.b/x)"
            ),
            "Failed to connect to http://127.0.0.1:1/: refused (see https://a.b/x)"
        );
        assert_eq!(redacted_text("odd :// text"), "odd :// text");
        assert_eq!(
            redacted_text("http://127.0.0.1:6334"),
            "http://127.0.0.1:6334"
        );
    }
}
