//! `LISTEN=UPSTREAM` mappings: `34000=127.0.0.1:8080`, `0.0.0.0:34000=host:5432`, `34000=https://api.example.com`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;

use super::values::ParseError;

/// Where the proxy forwards a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Host name or IP address (without brackets).
    pub host: String,
    pub port: u16,
    /// Originate TLS towards the upstream (`https://`), SNI = `host`.
    pub tls: bool,
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.tls {
            write!(f, "https://{host}:{}", self.port)
        } else {
            write!(f, "{host}:{}", self.port)
        }
    }
}

/// One listener and the upstream its connections are relayed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub listen: SocketAddr,
    pub upstream: Upstream,
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.listen, self.upstream)
    }
}

const MAPPING_FORMS: &str = "expected LISTEN=UPSTREAM, e.g. 34000=127.0.0.1:8080, \
127.0.0.1:34000=db.local:5432 or 34000=https://api.example.com";

fn parse_listen(raw: &str, whole: &str) -> Result<SocketAddr, ParseError> {
    let v = raw.trim();
    if let Ok(port) = v.parse::<u16>() {
        // A bare port stays on loopback; all interfaces need an explicit 0.0.0.0.
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    v.parse::<SocketAddr>().map_err(|_| {
        ParseError::new(format!(
            "mapping '{whole}': listen address '{v}' must be a port (34000) or IP:PORT \
             (0.0.0.0:34000, [::1]:34000); {MAPPING_FORMS}"
        ))
    })
}

fn parse_upstream(raw: &str, whole: &str) -> Result<Upstream, ParseError> {
    let v = raw.trim();
    if v.contains("://") {
        let url = url::Url::parse(v).map_err(|e| {
            ParseError::new(format!(
                "mapping '{whole}': upstream '{v}' is not a valid URL ({e})"
            ))
        })?;
        let tls = match url.scheme() {
            "https" => true,
            "http" | "tcp" => false,
            other => {
                return Err(ParseError::new(format!(
                    "mapping '{whole}': upstream scheme '{other}' is not supported; accepted: http, https, tcp"
                )));
            }
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => {
                return Err(ParseError::new(format!(
                    "mapping '{whole}': upstream '{v}' has no host"
                )));
            }
        };
        if !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(ParseError::new(format!(
                "mapping '{whole}': upstream '{v}' has a path; a TCP mapping takes only scheme://host[:port]"
            )));
        }
        let port = url.port_or_known_default().ok_or_else(|| {
            ParseError::new(format!("mapping '{whole}': upstream '{v}' needs a port"))
        })?;
        return Ok(Upstream { host, port, tls });
    }
    let (host, port) = v.rsplit_once(':').ok_or_else(|| {
        ParseError::new(format!(
            "mapping '{whole}': upstream '{v}' needs a port (host:port) or a scheme (https://host); {MAPPING_FORMS}"
        ))
    })?;
    let port: u16 = port.parse().map_err(|_| {
        ParseError::new(format!(
            "mapping '{whole}': upstream port '{port}' is not a number between 1 and 65535"
        ))
    })?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(ParseError::new(format!(
            "mapping '{whole}': upstream host '{host}' is not a host name or IP address"
        )));
    }
    if port == 0 {
        return Err(ParseError::new(format!(
            "mapping '{whole}': upstream port must be between 1 and 65535"
        )));
    }
    Ok(Upstream {
        host: host.to_string(),
        port,
        tls: false,
    })
}

impl FromStr for Mapping {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (listen, upstream) = s
            .split_once('=')
            .ok_or_else(|| ParseError::new(format!("mapping '{s}' has no '='; {MAPPING_FORMS}")))?;
        Ok(Mapping {
            listen: parse_listen(listen, s)?,
            upstream: parse_upstream(upstream, s)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        let m: Mapping = "34000=127.0.0.1:8080".parse().unwrap();
        assert_eq!(m.listen, "127.0.0.1:34000".parse().unwrap());
        assert_eq!(m.upstream.host, "127.0.0.1");
        assert_eq!(m.upstream.port, 8080);
        assert!(!m.upstream.tls);

        let m: Mapping = "0.0.0.0:34000=db.local:5432".parse().unwrap();
        assert_eq!(m.listen, "0.0.0.0:34000".parse().unwrap());
        assert_eq!(m.upstream.host, "db.local");

        let m: Mapping = "34000=https://jsonplaceholder.typicode.com"
            .parse()
            .unwrap();
        assert_eq!(m.upstream.port, 443);
        assert!(m.upstream.tls);
        assert_eq!(m.upstream.host, "jsonplaceholder.typicode.com");

        let m: Mapping = "34000=https://jsonplaceholder.typicode.com:443"
            .parse()
            .unwrap();
        assert_eq!(m.upstream.port, 443);
        let m: Mapping = "34000=http://localhost".parse().unwrap();
        assert_eq!(m.upstream.port, 80);
        let m: Mapping = "[::1]:34000=[::1]:80".parse().unwrap();
        assert_eq!(m.upstream.host, "::1");
    }

    #[test]
    fn rejects_bad_mappings_naming_the_value() {
        for bad in [
            "34000",
            "abc=127.0.0.1:80",
            "34000=127.0.0.1",
            "34000=host:notaport",
            "34000=ftp://x",
            "70000=127.0.0.1:80",
            "34000=https://x/path",
        ] {
            let err = bad.parse::<Mapping>().unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }
}
