//! The Kubernetes manifests of `examples/kubernetes/` run `fault` with arguments read here by our own command-line
//! parser, so a renamed or removed flag breaks the build instead of a cluster; the metrics port Prometheus is
//! told to scrape is the one `--metrics` serves.

use std::path::Path;

use clap::Parser;
use serde::Deserialize;
use serde_yaml_ng::Value;

/// Every container of a manifest document (a Deployment's pod template, a Pod, a Job's template), with the
/// pod's annotations.
fn containers(document: &Value) -> Vec<(Value, Value)> {
    let pod = match document["kind"].as_str() {
        Some("Pod") => document.clone(),
        _ => document["spec"]["template"].clone(),
    };
    pod["spec"]["containers"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|container| (container.clone(), pod["metadata"]["annotations"].clone()))
        .collect()
}

fn texts(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|item| match item {
            Value::String(text) => text.clone(),
            other => serde_yaml_ng::to_string(other).unwrap().trim().to_owned(),
        })
        .collect()
}

#[test]
fn every_fault_argument_of_the_kubernetes_examples_is_one_our_parser_takes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for document in serde_yaml_ng::Deserializer::from_str(&text) {
            let document = Value::deserialize(document).unwrap();
            for (container, annotations) in containers(&document) {
                let argv: Vec<String> = texts(&container["command"])
                    .into_iter()
                    .chain(texts(&container["args"]))
                    .collect();
                if argv.first().map(String::as_str) != Some("fault") {
                    continue;
                }
                let cli = fault::cli::Cli::try_parse_from(&argv).unwrap_or_else(|e| {
                    panic!(
                        "{}: `{}` does not parse:\n{e}",
                        path.display(),
                        argv.join(" ")
                    )
                });
                let scraped = annotations["prometheus.io/port"]
                    .as_str()
                    .unwrap_or_default();
                let metrics = argv
                    .iter()
                    .position(|arg| arg == "--metrics")
                    .map(|at| argv[at + 1].clone());
                if let Some(metrics) = metrics {
                    assert!(
                        metrics.ends_with(&format!(":{scraped}")),
                        "{}: Prometheus scrapes port {scraped:?}, --metrics serves {metrics}",
                        path.display()
                    );
                }
                checked.push((path.clone(), format!("{:?}", cli.command)));
            }
        }
    }
    assert!(
        !checked.is_empty(),
        "no container of examples/kubernetes runs fault"
    );
}
