//! The locustfile fault hands to Locust: its plugin ([`PLUGIN`]) first, then the user's locustfile (its text
//! run in the same module, compiled under its own path so that Locust's errors point into it) or, without one,
//! tasks written from the scenario's traffic mix. One self-contained file, so that workers elsewhere can fetch
//! it from the master (`locust --worker -f -`).

use std::path::Path;

use serde_json::json;

use crate::load::Mix;

/// The plugin: request records to the master, the master's start held until fault says go.
pub const PLUGIN: &str = include_str!("plugin.py");

/// A Python string literal holding `text` (a JSON string is one).
fn py_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The plugin, then the user's locustfile `source` (read from `path`), run in this module so that Locust finds
/// its users here.
pub fn wrapping(path: &Path, source: &str) -> String {
    let dir = path.parent().unwrap_or(Path::new("."));
    format!(
        "{PLUGIN}\n\n# The locustfile {path}, run here.\n\
         _fault_sys.path.insert(0, {dir})\n\
         exec(compile({source}, {path}, \"exec\"), globals())\n",
        path = py_string(&path.display().to_string()),
        dir = py_string(&dir.display().to_string()),
        source = py_string(source),
    )
}

/// Whole weights in the ratio of the mix's (Locust's task weights are whole numbers).
fn whole_weights(weights: &[f64]) -> Vec<u64> {
    if weights.iter().all(|w| w.fract() == 0.0) {
        return weights.iter().map(|w| *w as u64).collect();
    }
    let max = weights
        .iter()
        .copied()
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    weights
        .iter()
        .map(|&w| {
            if w > 0.0 {
                ((w / max) * 1000.0).round().max(1.0) as u64
            } else {
                0
            }
        })
        .collect()
}

/// The plugin, then one user class whose tasks are the mix's requests, each weighted as in the mix, each
/// judged by its expectation (a status below 400 without one) and given up after `timeout_s`.
pub fn from_mix(mix: &Mix, timeout_s: f64) -> String {
    let weights = whole_weights(
        &mix.requests()
            .iter()
            .map(|request| request.weight)
            .collect::<Vec<_>>(),
    );
    let requests: Vec<serde_json::Value> = mix
        .requests()
        .iter()
        .zip(weights)
        .map(|(request, weight)| {
            let target = &request.target;
            let path = match target.url.query() {
                Some(query) => format!("{}?{query}", target.url.path()),
                None => target.url.path().to_owned(),
            };
            let mut headers: serde_json::Map<String, serde_json::Value> = target
                .headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.to_string(),
                        String::from_utf8_lossy(value.as_bytes()).into(),
                    )
                })
                .collect();
            // Through a proxy in front of the service, `Host` stays the service's.
            let authority = match target.url.port() {
                Some(port) => format!("{}:{port}", target.host()),
                None => target.host().to_owned(),
            };
            headers.entry("Host").or_insert(authority.into());
            json!({
                "name": request.name,
                "method": target.method.as_str(),
                "path": path,
                "headers": headers,
                "body": String::from_utf8_lossy(&target.body),
                "weight": weight,
                "statuses": request.expect.statuses,
                "body_contains": request.expect.body_contains.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
            })
        })
        .collect();
    let mix_json = serde_json::Value::from(requests).to_string();
    format!(
        "{PLUGIN}\n\n# The scenario's traffic mix, one weighted task per request.\n{}",
        MIX_USER
            .replace("@MIX@", &py_string(&mix_json))
            .replace("@TIMEOUT@", &format!("{timeout_s}"))
    )
}

/// The user class of a mix; `@MIX@` is its requests as a JSON text, `@TIMEOUT@` the timeout in seconds.
const MIX_USER: &str = r#"from locust import HttpUser as _FaultHttpUser

_FAULT_MIX = _fault_json.loads(@MIX@)
_FAULT_KEPT = 1 << 20


def _fault_task(request):
    def send(user):
        with user.client.request(
            request["method"],
            request["path"],
            name=request["name"],
            headers=request["headers"],
            data=request["body"].encode() or None,
            timeout=@TIMEOUT@,
            catch_response=True,
        ) as response:
            status = response.status_code or 0
            if status == 0:
                response.failure(f"{type(response.error).__name__}: {response.error}")
                return
            statuses = request["statuses"]
            ok = status in statuses if statuses else status < 400
            needle = request["body_contains"]
            if ok and needle is not None and needle.encode() not in (response.content or b"")[:_FAULT_KEPT]:
                ok = False
            if ok:
                response.success()
            else:
                response.failure(f"status {status}")

    send.__name__ = request["name"]
    return send


class FaultMix(_FaultHttpUser):
    tasks = {_fault_task(request): request["weight"] for request in _FAULT_MIX}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_keep_their_ratio_as_whole_numbers() {
        assert_eq!(whole_weights(&[3.0, 1.0]), vec![3, 1]);
        assert_eq!(whole_weights(&[0.75, 0.25]), vec![1000, 333]);
        assert_eq!(whole_weights(&[2.5, 0.0]), vec![1000, 0]);
    }
}
