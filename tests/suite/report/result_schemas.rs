//! The JSON Schemas of the scenario and scan results are published in the book (`docs/src/schemas/`) and given as the
//! scenario tools' `outputSchema`: one document each. This test fails when a published file differs from what
//! the code describes; with `FAULT_UPDATE_DOCS=1` it writes them instead.

use std::path::Path;

use serde_json::Value;

/// The published schema files and what the code renders for each.
#[test]
fn the_published_result_schemas_are_the_ones_the_code_describes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/schemas");
    let update = std::env::var("FAULT_UPDATE_DOCS").is_ok_and(|v| v.trim() == "1");
    let mut stale = Vec::new();
    let scan = ("scan-result.json", fault::scan::report::result_schema());
    for (name, schema) in fault::report::result_schemas().into_iter().chain([scan]) {
        let rendered = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let path = dir.join(name);
        if update {
            std::fs::write(&path, &rendered).unwrap();
            continue;
        }
        if std::fs::read_to_string(&path).ok().as_deref() != Some(rendered.as_str()) {
            stale.push(format!("docs/src/schemas/{name}"));
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from the code's result schemas; run FAULT_UPDATE_DOCS=1 cargo test --test suite \
         report::result_schemas and commit them",
        stale.join(", ")
    );
}

/// Every scenario tool's `outputSchema` is the published document of its report, which carries its
/// schema_version and the encoding of its histograms.
#[test]
fn every_scenario_tool_gives_the_published_schema_as_its_output_schema() {
    let schemas: std::collections::BTreeMap<&str, Value> =
        fault::report::result_schemas().into_iter().collect();
    let (impact, chaos) = (
        &schemas["impact-result.json"],
        &schemas["chaos-result.json"],
    );
    let mut checked = 0;
    let scan = fault::scan::report::result_schema();
    for tool in fault::mcp::FaultServer::tools() {
        let expected = if tool.name.ends_with("_impact_scenario") {
            impact
        } else if tool.name == "fault_run_mcp_chaos_scenario" {
            chaos
        } else if tool.name == "fault_scan_mcp_server" {
            &scan
        } else {
            continue;
        };
        let given = Value::Object((*tool.output_schema.clone().expect("an outputSchema")).clone());
        assert_eq!(&given, expected, "{}", tool.name);
        checked += 1;
    }
    assert!(checked >= 10, "{checked} scenario tools");
    for schema in [impact, chaos, &scan] {
        let required = schema["required"].as_array().unwrap();
        assert!(
            required.contains(&Value::from("schema_version")),
            "{schema}"
        );
    }
    let encoded = impact.to_string();
    assert!(
        encoded.contains("^HISTFAAA"),
        "the impact schema names the encoding"
    );
}
