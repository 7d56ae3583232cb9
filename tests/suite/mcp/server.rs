//! The server starts, identifies itself and lists its tools.

use crate::support::common;

#[tokio::test]
async fn initialize_reports_name_version_and_instructions() {
    let client = common::spawn().await;
    let info = client.peer_info().expect("server info after initialize");
    let implementation = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(implementation.name, "fault");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or_default()
            .contains("fault_list_function_names")
    );
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test]
async fn every_tool_says_what_it_touches_in_its_annotations() {
    let client = common::spawn().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.len() >= 17, "{} tools", tools.len());
    for tool in &tools {
        let annotations = tool
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no annotations", tool.name));
        let read_only = annotations
            .read_only_hint
            .unwrap_or_else(|| panic!("{}: no readOnlyHint", tool.name));
        assert!(
            annotations.open_world_hint.is_some(),
            "{}: no openWorldHint",
            tool.name
        );
        if !read_only {
            assert!(
                annotations.destructive_hint.is_some() && annotations.idempotent_hint.is_some(),
                "{}: a tool that writes says whether it is destructive and idempotent",
                tool.name
            );
        }
        let name = tool.name.as_ref();
        // The scenarios and the scan start processes and call tools that may write; indexing writes a store.
        let expect_read_only = !(name.starts_with("fault_run_")
            || name == "fault_index_source_code"
            || name == "fault_scan_mcp_server");
        assert_eq!(read_only, expect_read_only, "{name}");
    }
    client.cancel().await.expect("clean shutdown");
}
