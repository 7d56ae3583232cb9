//! `fault run`: the proxy on the command line. `RunArgs` converts into the same [`ProxyConfig`]
//! the scenario tools use.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use super::config::{
    BandwidthSpec, BandwidthUnit, BlackholeSpec, Direction, FaultCommon, FaultSpec, JitterSpec,
    LatencyDistribution, LatencySpec, PacketLossSpec, ParseError, ProxyConfig, Schedule, Side,
    parse_rate,
};
use super::mapping::Mapping;
use super::{ProxyError, ProxyStats};

fn parse_duration(raw: &str) -> Result<Duration, String> {
    humantime::parse_duration(raw.trim())
        .map_err(|e| format!("'{raw}' is not a duration ({e}); expected e.g. 30s, 5m, 1h30m"))
}

fn parse_ms(raw: &str) -> Result<f64, String> {
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("'{raw}' is not a number of milliseconds"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!(
            "'{raw}' must be a non-negative number of milliseconds"
        ))
    }
}

fn parse_probability(raw: &str) -> Result<f64, String> {
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("probability '{raw}' is not a number between 0.0 and 1.0"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("probability '{raw}' must be between 0.0 and 1.0"))
    }
}

fn parse_loss_rate(raw: &str) -> Result<f64, String> {
    parse_rate(raw).map_err(|e: ParseError| e.to_string())
}

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e3)
}

/// Run the fault-injecting TCP proxy.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Example: fault run --with-latency --latency-mean 300 --proxy \"34000=https://jsonplaceholder.typicode.com\""
)]
pub struct RunArgs {
    /// A mapping LISTEN=UPSTREAM, repeatable: 34000=127.0.0.1:8080, 0.0.0.0:34000=db:5432,
    /// 34000=https://api.example.com (a bare port listens on 127.0.0.1).
    #[arg(
        long = "proxy",
        env = "FAULT_PROXY",
        value_delimiter = ',',
        required = true,
        value_name = "LISTEN=UPSTREAM"
    )]
    pub proxies: Vec<Mapping>,

    /// Stop after this long (e.g. 30s, 5m); without it, run until Ctrl-C.
    #[arg(long, env = "FAULT_DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Seed for every random decision, for reproducible runs.
    #[arg(long, env = "FAULT_SEED")]
    pub seed: Option<u64>,

    /// Extra PEM CA file trusted for https:// upstreams (besides the system roots).
    #[arg(long, env = "FAULT_PROXY_EXTRA_CA", value_name = "PATH")]
    pub upstream_ca: Option<PathBuf>,

    // --- latency
    /// Add latency.
    #[arg(long, env = "FAULT_WITH_LATENCY", help_heading = "Latency")]
    pub with_latency: bool,
    /// Mean latency in milliseconds.
    #[arg(long, env = "FAULT_LATENCY_MEAN", default_value = "0", value_parser = parse_ms, help_heading = "Latency")]
    pub latency_mean: f64,
    /// Standard deviation in milliseconds.
    #[arg(long, env = "FAULT_LATENCY_STDDEV", default_value = "0", value_parser = parse_ms, help_heading = "Latency")]
    pub latency_stddev: f64,
    /// Distribution: uniform, normal, pareto, pareto-normal.
    #[arg(
        long,
        env = "FAULT_LATENCY_DISTRIBUTION",
        default_value = "normal",
        help_heading = "Latency"
    )]
    pub latency_distribution: LatencyDistribution,
    /// Lowest latency in milliseconds (clamp).
    #[arg(long, env = "FAULT_LATENCY_MIN", value_parser = parse_ms, help_heading = "Latency")]
    pub latency_min: Option<f64>,
    /// Highest latency in milliseconds (clamp).
    #[arg(long, env = "FAULT_LATENCY_MAX", value_parser = parse_ms, help_heading = "Latency")]
    pub latency_max: Option<f64>,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_LATENCY_SIDE",
        default_value = "server",
        help_heading = "Latency"
    )]
    pub latency_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_LATENCY_DIRECTION",
        default_value = "ingress",
        help_heading = "Latency"
    )]
    pub latency_direction: Direction,
    /// Delay every read/write instead of once per message.
    #[arg(long, env = "FAULT_LATENCY_PER_READ_WRITE", help_heading = "Latency")]
    pub latency_per_read_write: bool,
    /// Share of messages delayed, 0.0 to 1.0.
    #[arg(long, env = "FAULT_LATENCY_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Latency")]
    pub latency_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_LATENCY_SCHED", help_heading = "Latency")]
    pub latency_sched: Option<Schedule>,

    // --- jitter
    /// Add jitter.
    #[arg(long, env = "FAULT_WITH_JITTER", help_heading = "Jitter")]
    pub with_jitter: bool,
    /// Largest delay of one spike, in milliseconds.
    #[arg(long, env = "FAULT_JITTER_AMPLITUDE", default_value = "20", value_parser = parse_ms, help_heading = "Jitter")]
    pub jitter_amplitude: f64,
    /// Spikes per second (Hz).
    #[arg(
        long,
        env = "FAULT_JITTER_FREQUENCY",
        default_value = "5",
        help_heading = "Jitter"
    )]
    pub jitter_frequency: f64,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_JITTER_SIDE",
        default_value = "server",
        help_heading = "Jitter"
    )]
    pub jitter_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_JITTER_DIRECTION",
        default_value = "ingress",
        help_heading = "Jitter"
    )]
    pub jitter_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_JITTER_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Jitter")]
    pub jitter_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_JITTER_SCHED", help_heading = "Jitter")]
    pub jitter_sched: Option<Schedule>,

    // --- bandwidth
    /// Limit bandwidth (one link shared by all connections of the proxy).
    #[arg(long, env = "FAULT_WITH_BANDWIDTH", help_heading = "Bandwidth")]
    pub with_bandwidth: bool,
    /// Rate, in --bandwidth-unit.
    #[arg(
        long,
        env = "FAULT_BANDWIDTH_RATE",
        default_value = "1000",
        help_heading = "Bandwidth"
    )]
    pub bandwidth_rate: u64,
    /// Unit: Bps, KBps, MBps, GBps (bytes per second, decimal).
    #[arg(
        long,
        env = "FAULT_BANDWIDTH_UNIT",
        default_value = "Bps",
        help_heading = "Bandwidth"
    )]
    pub bandwidth_unit: BandwidthUnit,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_BANDWIDTH_SIDE",
        default_value = "server",
        help_heading = "Bandwidth"
    )]
    pub bandwidth_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_BANDWIDTH_DIRECTION",
        default_value = "ingress",
        help_heading = "Bandwidth"
    )]
    pub bandwidth_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_BANDWIDTH_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Bandwidth")]
    pub bandwidth_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_BANDWIDTH_SCHED", help_heading = "Bandwidth")]
    pub bandwidth_sched: Option<Schedule>,

    // --- packet loss
    /// Lose packets (segments are delivered late by a retransmission timeout).
    #[arg(long, env = "FAULT_WITH_PACKET_LOSS", help_heading = "Packet loss")]
    pub with_packet_loss: bool,
    /// Share of segments lost: 0.05 or 5%.
    #[arg(long, env = "FAULT_PACKET_LOSS_RATE", default_value = "0.05", value_parser = parse_loss_rate, help_heading = "Packet loss")]
    pub packet_loss_rate: f64,
    /// Mean burst length in segments (Gilbert-Elliott); without it losses are independent.
    #[arg(
        long,
        env = "FAULT_PACKET_LOSS_BURST_LENGTH",
        help_heading = "Packet loss"
    )]
    pub packet_loss_burst_length: Option<f64>,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_PACKET_LOSS_SIDE",
        default_value = "server",
        help_heading = "Packet loss"
    )]
    pub packet_loss_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_PACKET_LOSS_DIRECTION",
        default_value = "ingress",
        help_heading = "Packet loss"
    )]
    pub packet_loss_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_PACKET_LOSS_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Packet loss")]
    pub packet_loss_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_PACKET_LOSS_SCHED", help_heading = "Packet loss")]
    pub packet_loss_sched: Option<Schedule>,

    // --- blackhole
    /// Swallow the flow's bytes; peers wait until their own timeout.
    #[arg(long, env = "FAULT_WITH_BLACKHOLE", help_heading = "Blackhole")]
    pub with_blackhole: bool,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_BLACKHOLE_SIDE",
        default_value = "server",
        help_heading = "Blackhole"
    )]
    pub blackhole_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_BLACKHOLE_DIRECTION",
        default_value = "ingress",
        help_heading = "Blackhole"
    )]
    pub blackhole_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_BLACKHOLE_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Blackhole")]
    pub blackhole_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_BLACKHOLE_SCHED", help_heading = "Blackhole")]
    pub blackhole_sched: Option<Schedule>,
}

impl From<&RunArgs> for ProxyConfig {
    fn from(a: &RunArgs) -> Self {
        let mut faults = Vec::new();
        let common = |side, direction, probability, schedule: &Option<Schedule>| FaultCommon {
            side,
            direction,
            probability,
            schedule: *schedule,
        };
        if a.with_latency {
            faults.push(FaultSpec::Latency(LatencySpec {
                common: common(
                    a.latency_side,
                    a.latency_direction,
                    a.latency_probability,
                    &a.latency_sched,
                ),
                mean: ms(a.latency_mean),
                stddev: ms(a.latency_stddev),
                distribution: a.latency_distribution,
                min: a.latency_min.map(ms),
                max: a.latency_max.map(ms),
                per_read_write: a.latency_per_read_write,
            }));
        }
        if a.with_jitter {
            faults.push(FaultSpec::Jitter(JitterSpec {
                common: common(
                    a.jitter_side,
                    a.jitter_direction,
                    a.jitter_probability,
                    &a.jitter_sched,
                ),
                amplitude: ms(a.jitter_amplitude),
                frequency: a.jitter_frequency,
            }));
        }
        if a.with_packet_loss {
            faults.push(FaultSpec::PacketLoss(PacketLossSpec {
                common: common(
                    a.packet_loss_side,
                    a.packet_loss_direction,
                    a.packet_loss_probability,
                    &a.packet_loss_sched,
                ),
                rate: a.packet_loss_rate,
                burst_length: a.packet_loss_burst_length,
                ..Default::default()
            }));
        }
        if a.with_bandwidth {
            faults.push(FaultSpec::Bandwidth(BandwidthSpec {
                common: common(
                    a.bandwidth_side,
                    a.bandwidth_direction,
                    a.bandwidth_probability,
                    &a.bandwidth_sched,
                ),
                rate: a.bandwidth_rate,
                unit: a.bandwidth_unit,
            }));
        }
        if a.with_blackhole {
            faults.push(FaultSpec::Blackhole(BlackholeSpec {
                common: common(
                    a.blackhole_side,
                    a.blackhole_direction,
                    a.blackhole_probability,
                    &a.blackhole_sched,
                ),
            }));
        }
        ProxyConfig {
            mappings: a.proxies.clone(),
            faults,
            seed: a.seed,
            run_duration: a.duration,
            extra_ca: a.upstream_ca.clone(),
            connect_timeout: None,
        }
    }
}

impl From<RunArgs> for ProxyConfig {
    fn from(a: RunArgs) -> Self {
        ProxyConfig::from(&a)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Proxy(#[from] ProxyError),
}

fn in_ms(d: Duration) -> String {
    format!("{}ms", d.as_secs_f64() * 1e3)
}

fn describe(spec: &FaultSpec) -> String {
    let c = spec.common();
    let detail = match spec {
        FaultSpec::Latency(l) => format!(
            "mean {} stddev {} {}{}",
            in_ms(l.mean),
            in_ms(l.stddev),
            l.distribution,
            if l.per_read_write {
                " per read/write"
            } else {
                ""
            }
        ),
        FaultSpec::Jitter(j) => {
            format!("amplitude {} at {} Hz", in_ms(j.amplitude), j.frequency)
        }
        FaultSpec::Bandwidth(b) => format!("{} {}", b.rate, b.unit),
        FaultSpec::PacketLoss(p) => format!("{:.1}%", p.rate * 100.0),
        FaultSpec::Blackhole(_) => String::new(),
        FaultSpec::HttpError(h) => format!("{} p={}", h.status_code, h.probability),
    };
    let window = match &c.schedule {
        Some(s) => format!(", schedule {s}"),
        None => String::new(),
    };
    format!(
        "{} {detail} ({} {}, probability {}{window})",
        spec.kind(),
        c.side,
        c.direction,
        c.probability
    )
}

fn status_line(s: &ProxyStats) -> String {
    let faults: Vec<String> = s
        .faults_applied
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "conns {} open / {} total | up {} B | down {} B | faults {}",
        s.connections_active,
        s.connections_total,
        s.bytes_to_upstream,
        s.bytes_to_client,
        if faults.is_empty() {
            "-".into()
        } else {
            faults.join(" ")
        }
    )
}

pub async fn run(args: RunArgs) -> Result<(), RunError> {
    let config = ProxyConfig::from(&args);
    let faults: Vec<String> = config.faults.iter().map(describe).collect();
    let handle = super::start(config).await?;
    let mut stderr = std::io::stderr();
    for mapping in handle.mappings() {
        let _ = writeln!(stderr, "fault: proxying {mapping}");
    }
    for f in &faults {
        let _ = writeln!(stderr, "fault: fault {f}");
    }
    if faults.is_empty() {
        let _ = writeln!(stderr, "fault: no fault enabled (pass-through)");
    }
    let live = stderr.is_terminal();
    let deadline = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            r = tokio::signal::ctrl_c() => {
                if let Err(e) = r {
                    tracing::warn!("cannot listen for Ctrl-C: {e}");
                    std::future::pending::<()>().await;
                }
                break;
            }
            _ = tick.tick(), if live => {
                let _ = write!(stderr, "\r\x1b[2K{}", status_line(&handle.stats()));
                let _ = stderr.flush();
            }
        }
    }
    let final_stats = handle.stats();
    handle.stop().await;
    if live {
        let _ = writeln!(stderr);
    }
    let _ = writeln!(stderr, "fault: stopped; {}", status_line(&final_stats));
    Ok(())
}
