//! Names in messages: a name nobody declared, answered with the closest declared one, and the members an
//! object takes.

use super::Field;

/// The declared name closest to `given`, when one is close enough to be what was meant: a typo
/// (`deviaton`, `ul`), a different case or separator (`numClients`), letters swapped.
pub fn closest<'a>(given: &str, declared: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let plain = |name: &str| name.to_ascii_lowercase().replace(['-', '_'], "");
    let given_plain = plain(given);
    declared
        .into_iter()
        .filter_map(|name| {
            let name_plain = plain(name);
            let edits = strsim::damerau_levenshtein(&given_plain, &name_plain);
            let similar = strsim::jaro_winkler(&given_plain, &name_plain);
            // One slip in a short name, two in a longer one, or a close spelling.
            let allowed = if name_plain.len() < 5 { 1 } else { 2 };
            (edits <= allowed || similar >= 0.85).then_some((edits, similar, name))
        })
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .map(|(_, _, name)| name)
}

/// The message for a field nobody declared: "unknown field 'deviaton'; did you mean 'deviation'? (it
/// takes: …)".
pub fn unknown_field(given: &str, declared: &[&str]) -> String {
    let hint = closest(given, declared.iter().copied())
        .map(|name| format!("; did you mean '{name}'?"))
        .unwrap_or_default();
    format!(
        "unknown field '{given}'{hint} (it takes: {})",
        declared.join(", ")
    )
}

/// The members' names, as [`Field::accepts`] lists them: "name, url, weight".
pub(super) fn member_names(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|field| field.name)
        .collect::<Vec<_>>()
        .join(", ")
}
