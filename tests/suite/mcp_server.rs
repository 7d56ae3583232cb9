//! The server starts, identifies itself and lists its tools.

use crate::common;

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
