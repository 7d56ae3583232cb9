//! A load run from start to end: its clients started, waited for, cut at the hard deadline, and their
//! records merged into the report.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::{task::JoinSet, time::Instant};
use tokio_util::sync::CancellationToken;

use super::{
    LoadError, LoadPlan, LoadProgress, LoadReport, RequestSamples, Samples,
    client::Connector,
    phases,
    recorder::SampleRecorder,
    virtual_client::{RunState, virtual_client},
};

/// After `duration + timeout`, in-flight work gets this long to wind down before it is cut.
pub const GRACE: Duration = Duration::from_secs(2);

/// Runs the plan to its end, or until `cancel` fires (then `Err(Cancelled)`).
pub async fn run(
    plan: &LoadPlan,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<LoadReport, LoadError> {
    let (started, _) = tokio::sync::oneshot::channel();
    run_in_phases(plan, &[], started, cancel, progress).await
}

/// [`run`], with the requests also grouped into phases by when they were due: cut at `cuts` (times from the
/// run's start, in order), see [`phases`]. `started` gets the instant the schedule starts from, which every
/// request's due time counts from.
pub async fn run_in_phases(
    plan: &LoadPlan,
    cuts: &[Duration],
    started: tokio::sync::oneshot::Sender<Instant>,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<LoadReport, LoadError> {
    let target = plan.target();
    let dial = match plan.connect_to {
        Some(addr) => addr,
        None => target.resolve(plan.timeout).await?,
    };
    let tls = if target.is_tls() && !(plan.proxy_originates_tls && plan.connect_to.is_some()) {
        // The proxy's TLS setup: system roots plus the CA in $FAULT_PROXY_EXTRA_CA, if any.
        let connector = crate::tls::connector(None).map_err(|e| LoadError::Tls(e.to_string()))?;
        let name = rustls::pki_types::ServerName::try_from(target.host().to_owned())
            .map_err(|e| LoadError::Tls(format!("server name '{}': {e}", target.host())))?;
        Some((connector, name))
    } else {
        None
    };

    let stop = cancel.child_token();
    // If this future is dropped mid-run, the clients and their requests stop with it.
    let _stop_on_drop = stop.clone().drop_guard();
    let started_at = chrono::Utc::now();
    let start = Instant::now();
    // Whoever watches the run from outside counts from here; gone, it no longer watches.
    let _ = started.send(start);
    let shared = Arc::new(RunState {
        mix: plan.mix.clone(),
        connector: Connector {
            dial,
            tls,
            opened: AtomicU64::new(0),
        },
        num_clients: plan.num_clients,
        rate: plan.rate(),
        duration: plan.duration,
        timeout: plan.timeout,
        max_in_flight: plan.in_flight_cap() as usize,
        start,
        progress,
        recorders: plan
            .mix
            .requests()
            .iter()
            .map(|_| {
                SampleRecorder::new(
                    plan.num_clients,
                    plan.seconds(),
                    phases(cuts, plan.duration),
                )
            })
            .collect(),
    });
    let mut clients = JoinSet::new();
    for index in 0..plan.num_clients {
        clients.spawn(virtual_client(index, shared.clone(), stop.clone()));
    }

    let hard_deadline = start + plan.duration + plan.timeout + GRACE;
    let mut cut_short = false;
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                stop.cancel();
                return Err(LoadError::Cancelled);
            }
            joined = clients.join_next() => match joined {
                Some(Ok(())) => {}
                Some(Err(e)) => tracing::error!("a load client ended abnormally: {e}"),
                None => break,
            },
            _ = tokio::time::sleep_until(hard_deadline), if !cut_short => {
                // Clients return what they measured as soon as they see the stop.
                tracing::warn!("load run cut at duration + timeout + grace");
                stop.cancel();
                cut_short = true;
            }
        }
    }
    let elapsed = start.elapsed();
    let per_request: Vec<RequestSamples> = plan
        .mix
        .requests()
        .iter()
        .zip(&shared.recorders)
        .map(|(request, recorder)| RequestSamples {
            name: request.name.clone(),
            samples: recorder.samples(),
        })
        .collect();
    let mut samples = Samples::new(plan.seconds());
    samples.phases = phases(cuts, plan.duration);
    for request in &per_request {
        samples.merge(&request.samples);
    }
    Ok(LoadReport {
        started_at,
        ended_at: chrono::Utc::now(),
        elapsed,
        planned: plan.planned_requests(),
        connections_opened: shared.connector.opened.load(Ordering::Relaxed),
        cut_short,
        offered_per_second: plan.offered_per_second(),
        per_request,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::load::{Mix, Pace, Target};

    /// A target on 127.0.0.1 that takes every connection and never answers.
    async fn silent_target() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((connection, _)) = listener.accept().await {
                held.push(connection);
            }
        });
        addr
    }

    fn ms(histogram: &hdrhistogram::Histogram<u64>, at: u64) -> f64 {
        histogram.median_equivalent(at) as f64 / 1000.0
    }

    /// On one runtime thread, kept busy from 300 to 800 ms into the run: the request due at 500 ms goes out
    /// at about 800 ms and still times out at its due + 1 s, so no latency is over the timeout.
    #[tokio::test]
    async fn a_request_sent_late_times_out_at_its_due_plus_the_timeout() {
        let addr = silent_target().await;
        let plan = LoadPlan {
            mix: Mix::single(Target::parse(&format!("http://{addr}/"), "GET", &[], "").unwrap()),
            connect_to: Some(addr),
            proxy_originates_tls: false,
            num_clients: 1,
            pace: Pace::Open { rps: 2 },
            duration: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            max_in_flight: None,
        };
        let busy = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::thread::sleep(Duration::from_millis(500));
        });
        let report = run(&plan, &CancellationToken::new(), Arc::default())
            .await
            .unwrap();
        busy.await.unwrap();
        let samples = &report.samples;
        assert_eq!((samples.requests(), samples.timeouts), (2, 2));
        let latest = ms(&samples.all_us, samples.all_us.max());
        assert!((1000.0..1050.0).contains(&latest), "latency {latest} ms");
        let queued = ms(&samples.queueing_us, samples.queueing_us.max());
        assert!((250.0..350.0).contains(&queued), "queueing {queued} ms");
        let shortest = ms(&samples.service_us, samples.service_us.min());
        assert!((650.0..750.0).contains(&shortest), "service {shortest} ms");
    }
}
