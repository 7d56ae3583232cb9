//! The transport flags shared by every MCP server command (`fault agent tool`, `fault mcp-test-server`), and
//! their checks.

use std::net::SocketAddr;

use clap::{Args, ValueEnum};

use super::error::HttpServeError;

/// Where the HTTP endpoint listens unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8000";
/// The MCP endpoint's path unless `--path` says otherwise.
pub const DEFAULT_PATH: &str = "/mcp";

/// How clients reach an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout: the client starts the server.
    #[default]
    Stdio,
    /// Streamable HTTP on --listen and --path: one server shared by many clients.
    Http,
}

/// Transport options of an MCP server command.
#[derive(Debug, Clone, Default, Args)]
pub struct TransportArgs {
    /// How clients reach the server: stdio, or http (Streamable HTTP at http://LISTEN/PATH).
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,

    /// HTTP: the address to listen on [default: 127.0.0.1:8000]; port 0 picks a free port (the URL is logged).
    /// A non-loopback address needs --allow-remote.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,

    /// HTTP: the path of the MCP endpoint [default: /mcp].
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,

    /// HTTP: allow a non-loopback --listen address. Anyone who reaches it can call the tools: set
    /// --auth-token-env too, and name the host clients use with --allowed-host.
    #[arg(long)]
    pub allow_remote: bool,

    /// HTTP: a `Host` the server answers to besides localhost, 127.0.0.1, ::1 and the --listen host (repeatable;
    /// `name` or `name:port`). Other hosts get 403, which stops DNS rebinding.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// HTTP: a browser `Origin` allowed to call the server (repeatable; e.g. http://localhost:5173, `:*` for any
    /// port). A request with any other `Origin` gets 403; requests without one (non-browser clients) pass.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,

    /// HTTP: require `Authorization: Bearer TOKEN`, TOKEN being the value of this environment variable. Other
    /// requests get 401 with `WWW-Authenticate: Bearer`.
    #[arg(long, value_name = "NAME")]
    pub auth_token_env: Option<String>,

    /// HTTP: no sessions. Each POST is served on its own and a plain answer comes as application/json (SSE when
    /// the tool sends progress); cancellation is by closing the request.
    #[arg(long)]
    pub stateless: bool,
}

/// The checked HTTP settings.
#[derive(Debug, Clone)]
pub(super) struct HttpSettings {
    pub listen: SocketAddr,
    pub path: String,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// The bearer token, read from the environment at start.
    pub token: Option<String>,
    pub stateless: bool,
}

impl TransportArgs {
    /// The first HTTP-only flag given, for refusing it with `--transport stdio`.
    pub fn http_only_flag_given(&self) -> Option<&'static str> {
        [
            (self.listen.is_some(), "--listen"),
            (self.path.is_some(), "--path"),
            (self.allow_remote, "--allow-remote"),
            (!self.allowed_hosts.is_empty(), "--allowed-host"),
            (!self.allowed_origins.is_empty(), "--allowed-origin"),
            (self.auth_token_env.is_some(), "--auth-token-env"),
            (self.stateless, "--stateless"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// Checks the HTTP flags and reads the token: every refusal names its flag.
    pub(super) fn http_settings(&self) -> Result<HttpSettings, HttpServeError> {
        let invalid = |flag: &'static str, reason: String| HttpServeError::Flag { flag, reason };
        let listen = match self.listen {
            Some(listen) => listen,
            None => DEFAULT_LISTEN
                .parse()
                .map_err(|e| invalid("--listen", format!("the default {DEFAULT_LISTEN}: {e}")))?,
        };
        if !listen.ip().is_loopback() && !self.allow_remote {
            return Err(invalid(
                "--listen",
                format!(
                    "{listen} is not a loopback address, so anyone on the network could call the tools; \
                     pass --allow-remote to listen there (with --auth-token-env), or use 127.0.0.1"
                ),
            ));
        }
        let path = self.path.clone().unwrap_or_else(|| DEFAULT_PATH.to_owned());
        if !path.starts_with('/') || path.contains(['?', '#']) || path.contains(char::is_whitespace)
        {
            return Err(invalid(
                "--path",
                format!(
                    "'{path}' must start with '/' and have no query, fragment or space (e.g. /mcp)"
                ),
            ));
        }
        let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        if !listen.ip().is_unspecified() {
            allowed_hosts.push(listen.ip().to_string());
        }
        for host in &self.allowed_hosts {
            if host.trim().is_empty() || host.contains(['/', ' ']) {
                return Err(invalid(
                    "--allowed-host",
                    format!("'{host}' is not a host name or name:port"),
                ));
            }
            allowed_hosts.push(host.trim().to_owned());
        }
        for origin in &self.allowed_origins {
            if origin != "null" && !origin.contains("://") {
                return Err(invalid(
                    "--allowed-origin",
                    format!("'{origin}' needs a scheme, e.g. http://localhost:5173 (or `null`)"),
                ));
            }
        }
        let token = match &self.auth_token_env {
            None => None,
            Some(name) => match std::env::var(name) {
                Ok(token) if !token.trim().is_empty() => Some(token.trim().to_owned()),
                Ok(_) => {
                    return Err(invalid(
                        "--auth-token-env",
                        format!("the environment variable {name} is empty"),
                    ));
                }
                Err(_) => {
                    return Err(invalid(
                        "--auth-token-env",
                        format!("the environment variable {name} is not set (or not UTF-8)"),
                    ));
                }
            },
        };
        Ok(HttpSettings {
            listen,
            path,
            allowed_hosts,
            allowed_origins: self.allowed_origins.clone(),
            token,
            stateless: self.stateless,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(listen: &str) -> TransportArgs {
        TransportArgs {
            transport: Transport::Http,
            listen: Some(listen.parse().unwrap()),
            ..TransportArgs::default()
        }
    }

    #[test]
    fn a_non_loopback_address_needs_allow_remote() {
        let refused = http("0.0.0.0:0").http_settings().unwrap_err().to_string();
        assert!(
            refused.contains("--listen") && refused.contains("--allow-remote"),
            "{refused}"
        );
        let allowed = TransportArgs {
            allow_remote: true,
            ..http("0.0.0.0:0")
        };
        assert!(allowed.http_settings().is_ok());
        assert!(http("[::1]:0").http_settings().is_ok());
    }

    #[test]
    fn the_listen_host_and_the_given_hosts_are_allowed() {
        let settings = TransportArgs {
            allowed_hosts: vec!["mcp.example.com".into()],
            ..http("127.0.0.2:9")
        }
        .http_settings()
        .unwrap();
        assert_eq!(
            settings.allowed_hosts,
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "127.0.0.2",
                "mcp.example.com"
            ]
        );
    }

    #[test]
    fn bad_paths_origins_and_token_variables_name_their_flag() {
        for (args, flag) in [
            (
                TransportArgs {
                    path: Some("mcp".into()),
                    ..http("127.0.0.1:0")
                },
                "--path",
            ),
            (
                TransportArgs {
                    allowed_origins: vec!["localhost:3000".into()],
                    ..http("127.0.0.1:0")
                },
                "--allowed-origin",
            ),
            (
                TransportArgs {
                    auth_token_env: Some("FAULT_TEST_SURELY_UNSET_TOKEN_VARIABLE".into()),
                    ..http("127.0.0.1:0")
                },
                "--auth-token-env",
            ),
        ] {
            let message = args.http_settings().unwrap_err().to_string();
            assert!(message.starts_with(flag), "{message}");
        }
    }

    #[test]
    fn http_flags_are_named_when_given_with_stdio() {
        let args = TransportArgs {
            stateless: true,
            ..TransportArgs::default()
        };
        assert_eq!(args.http_only_flag_given(), Some("--stateless"));
        assert_eq!(TransportArgs::default().http_only_flag_given(), None);
    }
}
