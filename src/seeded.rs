//! The project's seeded-decision primitive: a keyed roll in `[0, 1)`, used by the MCP proxy (per call) and
//! the TCP proxy (per message).
//!
//! A decision (inject or not, how much jitter, which field to drift) must depend only on *what* is being
//! decided, never on the order in which concurrent events arrive. So instead of drawing from one shared
//! random generator, every decision hashes its key (the seed plus parts such as the fault's index, the tool
//! name, the tool's call ordinal and a salt) into a number in `[0, 1)`. The same key gives the same roll on
//! every run and every machine, and the roll is recorded next to its key so a run can be replayed.
//! Each part is hashed with FNV-1a and the parts are chained through SplitMix64's finaliser, so `("ab","c")`
//! and `("a","bc")` differ.

/// SplitMix64's output function: a fast, well-mixed bijection of 64-bit integers.
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over `bytes`, starting from `basis`.
pub fn fnv1a64(basis: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(basis, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME))
}

/// A 64-bit hash of `seed` and `parts`, stable across runs, platforms and versions of this crate.
pub fn keyed_hash(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = splitmix64(seed);
    for part in parts {
        h = fnv1a64(h ^ FNV_OFFSET, part);
        h = splitmix64(h ^ part.len() as u64);
    }
    h
}

/// The roll in `[0, 1)` for `seed` and `parts`: 53 uniform bits of [`keyed_hash`].
pub fn keyed_roll(seed: u64, parts: &[&[u8]]) -> f64 {
    (keyed_hash(seed, parts) >> 11) as f64 / (1u64 << 53) as f64
}

/// The roll of one call-level decision: `(seed, fault index, key, ordinal, salt)`, where `key` is the tool name
/// (or a caller-given call id) and `salt` separates independent decisions about the same call.
pub fn call_roll(seed: u64, fault: usize, key: &str, ordinal: u64, salt: &str) -> f64 {
    keyed_roll(
        seed,
        &[
            &(fault as u64).to_le_bytes(),
            key.as_bytes(),
            &ordinal.to_le_bytes(),
            salt.as_bytes(),
        ],
    )
}

/// A random generator for the decisions about one keyed thing (e.g. one message of one connection): its draws
/// depend only on `seed` and `parts`, never on what was drawn for anything else.
pub fn keyed_rng(seed: u64, parts: &[&[u8]]) -> rand::rngs::StdRng {
    rand::SeedableRng::seed_from_u64(keyed_hash(seed, parts))
}

/// FNV-1a of `bytes` as 16 hex digits (used for argument hashes in events).
pub fn fnv_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(FNV_OFFSET, bytes))
}

/// A seed that could not be read; the message says what a seed is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    #[error(
        "{0} is not a seed; accepted: a whole number from 0 to 18446744073709551615 (2^64 - 1)"
    )]
    OutOfRange(String),
    #[error(
        "{0} is not a seed; accepted: a whole number written in digits (a JSON integer or a string of digits)"
    )]
    NotWhole(String),
}

/// A seed as every face reads it: a JSON integer or a string of decimal digits, exact over the whole `u64`
/// range. A float, a negative number and anything above 2^64 - 1 are refused: read through `f64`, two seeds
/// above 2^53 would become one.
pub fn seed_from_json(value: &serde_json::Value) -> Result<u64, SeedError> {
    use serde_json::Value;
    match value {
        Value::Number(number) => {
            if let Some(seed) = number.as_u64() {
                return Ok(seed);
            }
            let text = number.to_string();
            // Below zero, or past 2^64 - 1 (which JSON readers hold as a float), is out of range; any other
            // number that is not an integer was written with a fraction or an exponent.
            let x = number.as_f64().unwrap_or(f64::NAN);
            if number.is_i64() || !(0.0..18_446_744_073_709_551_616.0).contains(&x) {
                Err(SeedError::OutOfRange(text))
            } else {
                Err(SeedError::NotWhole(text))
            }
        }
        Value::String(text) => seed_from_text(text),
        other => Err(SeedError::NotWhole(other.to_string())),
    }
}

/// A seed written as text (a flag, a plan key, a numeric string): decimal digits only.
pub fn seed_from_text(text: &str) -> Result<u64, SeedError> {
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        let quoted = format!("'{text}'");
        return Err(match digits.strip_prefix('-') {
            Some(rest) if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) => {
                SeedError::OutOfRange(quoted)
            }
            _ => SeedError::NotWhole(quoted),
        });
    }
    digits
        .parse()
        .map_err(|_| SeedError::OutOfRange(format!("'{text}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_exact_u64_and_nothing_else() {
        use serde_json::json;
        let max = u64::MAX;
        assert_eq!(seed_from_json(&json!(max)), Ok(max));
        assert_eq!(
            seed_from_json(&json!((1u64 << 53) + 1)),
            Ok((1u64 << 53) + 1)
        );
        assert_eq!(seed_from_json(&json!("18446744073709551615")), Ok(max));
        assert_eq!(seed_from_json(&json!(" 42 ")), Ok(42));
        assert_eq!(
            seed_from_text("9007199254740993"),
            Ok(9_007_199_254_740_993)
        );
        let refused = |value: serde_json::Value| seed_from_json(&value).unwrap_err().to_string();
        assert!(refused(json!("18446744073709551616")).contains("from 0 to 18446744073709551615"));
        let two_to_64: serde_json::Value = serde_json::from_str("18446744073709551616").unwrap();
        assert!(refused(two_to_64).contains("from 0 to"));
        assert!(refused(json!(-1)).starts_with("-1 is not a seed"));
        assert!(refused(json!("-1")).contains("from 0 to"));
        assert!(refused(json!(1.5)).contains("written in digits"));
        assert!(refused(json!(1e3)).contains("written in digits"));
        assert!(refused(json!("1e3")).contains("written in digits"));
        assert!(refused(json!(true)).contains("written in digits"));
        assert!(refused(json!("")).contains("written in digits"));
    }

    #[test]
    fn same_key_same_roll_and_parts_are_delimited() {
        assert_eq!(
            call_roll(42, 0, "echo", 7, ""),
            call_roll(42, 0, "echo", 7, "")
        );
        assert_ne!(
            call_roll(42, 0, "echo", 7, ""),
            call_roll(43, 0, "echo", 7, "")
        );
        assert_ne!(keyed_roll(1, &[b"ab", b"c"]), keyed_roll(1, &[b"a", b"bc"]));
    }

    #[test]
    fn rolls_are_uniform_enough() {
        let n = 20_000;
        let below = (0..n)
            .filter(|i| call_roll(42, 1, "tool", *i, "") < 0.3)
            .count();
        let share = below as f64 / n as f64;
        assert!((share - 0.3).abs() < 0.02, "share below 0.3 was {share}");
        assert!((0..n).all(|i| (0.0..1.0).contains(&call_roll(7, 0, "t", i, "x"))));
    }

    #[test]
    fn a_known_value_is_stable_across_versions() {
        // A change here changes every recorded run's decisions: keep the primitive stable.
        assert_eq!(keyed_hash(42, &[b"echo"]), keyed_hash(42, &[b"echo"]));
        assert_eq!(fnv_hex(b""), "cbf29ce484222325");
    }
}
