//! Locust on this machine: which program, whether it is recent enough, and running it to its end.

use std::{process::Stdio, time::Duration};

use tokio::process::Command;

/// The oldest Locust fault drives (its request event's start time, `worker_connect`, `-f -` for workers).
pub const MIN_VERSION: (u32, u32) = (2, 40);
/// The environment variable naming the `locust` program (default: `locust` on the PATH).
pub const PROGRAM_VAR: &str = "FAULT_LOCUST";
/// How to install it, as the errors say.
pub const INSTALL: &str = "pip install locust";

/// How long `locust --version` and the import check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Lines of Locust's own output kept to relay in an error.
pub(super) const KEPT_LINES: usize = 30;

/// The `locust` program: `$FAULT_LOCUST`, else `locust` on the PATH.
pub fn program() -> String {
    std::env::var(PROGRAM_VAR)
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "locust".to_owned())
}

/// The version `locust --version` prints ("locust 2.47.0 from …").
pub(super) fn parse_version(text: &str) -> Option<(u32, u32, String)> {
    let word = text
        .split_whitespace()
        .skip_while(|w| !w.eq_ignore_ascii_case("locust"))
        .nth(1)?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    Some((major, minor, word.to_owned()))
}

/// Runs `program args` to its end within [`CHECK_TIMEOUT`]: its status and its stdout and stderr together.
pub(super) async fn run_to_end(program: &str, args: &[&str]) -> Result<(bool, String), String> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let output = tokio::time::timeout(CHECK_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| format!("no answer within {}s", CHECK_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.success(), text))
}

/// The last `KEPT_LINES` lines of `text`, trimmed.
pub(super) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(KEPT_LINES)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_what_locust_prints() {
        assert_eq!(
            parse_version(
                "locust 2.47.0 from /venv/lib/python3.11/site-packages/locust (Python 3.11.7)"
            ),
            Some((2, 47, "2.47.0".into()))
        );
        assert_eq!(parse_version("locust 2.8.6"), Some((2, 8, "2.8.6".into())));
        assert!((2, 8) < MIN_VERSION && (2, 47) >= MIN_VERSION);
        assert_eq!(parse_version("command not found"), None);
    }
}
