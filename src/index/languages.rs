//! The languages a `lang` value names.

use super::IndexError;
use crate::code::Language;

/// The languages a `lang` value names: `auto` (or nothing) means every language the registry knows.
pub fn parse_languages(names: &[String]) -> Result<Vec<Language>, IndexError> {
    let known = || {
        let mut names: Vec<&str> = Language::all().map(|l| l.name()).collect();
        names.push("auto");
        names.join(", ")
    };
    let mut languages = Vec::new();
    for name in names.iter().flat_map(|n| n.split(',')).map(str::trim) {
        if name.is_empty() {
            continue;
        }
        if name.eq_ignore_ascii_case("auto") {
            return Ok(Language::all().collect());
        }
        match Language::from_name(name) {
            Some(lang) if !languages.iter().any(|l: &Language| l.name() == lang.name()) => {
                languages.push(lang)
            }
            Some(_) => {}
            None => {
                return Err(IndexError::Language(format!(
                    "unknown language '{name}'; expected one of {}",
                    known()
                )));
            }
        }
    }
    if languages.is_empty() {
        return Ok(Language::all().collect());
    }
    Ok(languages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_parse_single_list_auto_and_reject_unknown() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_languages(&names(&["python"])).unwrap().len(), 1);
        assert_eq!(parse_languages(&names(&["Python", "go"])).unwrap().len(), 2);
        assert_eq!(parse_languages(&names(&["python,go"])).unwrap().len(), 2);
        assert_eq!(
            parse_languages(&names(&["auto"])).unwrap().len(),
            Language::all().count()
        );
        let err = parse_languages(&names(&["cobol"])).unwrap_err().to_string();
        assert!(err.contains("'cobol'") && err.contains("python"), "{err}");
    }
}
