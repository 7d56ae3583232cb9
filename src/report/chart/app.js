// The MCP App view of a scenario report (io.modelcontextprotocol/ui): it greets the host over postMessage
// (ui/initialize, then ui/notifications/initialized), and when the tool's result arrives
// (ui/notifications/tool-result) shows the charts and report the server put in the result's _meta, wired
// to the figures of its structuredContent. It reports its size to the host, and answers a teardown.
(function () {
  "use strict";
  const VIEW_KEY = "io.github.fault/view";
  const view = document.getElementById("view");
  let nextId = 1;
  const pending = new Map();

  function send(message) {
    window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*");
  }

  function request(method, params) {
    const id = nextId++;
    send({ id, method, params });
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }

  function reportSize() {
    const root = document.documentElement;
    send({ method: "ui/notifications/size-changed", params: { width: root.scrollWidth, height: root.scrollHeight } });
  }

  function show(result) {
    const shown = result && result._meta && result._meta[VIEW_KEY];
    if (shown && typeof shown.body === "string" && result.structuredContent) {
      view.innerHTML = shown.body;
      faultCharts(result.structuredContent);
    } else {
      // A result without a view (e.g. an error): its text.
      const text = (result && result.content ? result.content : [])
        .filter((block) => block.type === "text")
        .map((block) => block.text)
        .join("\n\n");
      const pre = document.createElement("pre");
      pre.textContent = text || "No report.";
      view.replaceChildren(pre);
    }
    reportSize();
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(message.error.message));
      else resolve(message.result);
      return;
    }
    switch (message.method) {
      case "ui/notifications/tool-result":
        show(message.params);
        break;
      case "ui/notifications/tool-cancelled":
        view.textContent = "The scenario was cancelled.";
        reportSize();
        break;
      case "ui/resource-teardown":
        send({ id: message.id, result: {} });
        break;
      default:
        if (message.id !== undefined && message.method) {
          send({ id: message.id, error: { code: -32601, message: `method not found: ${message.method}` } });
        }
    }
  });

  request("ui/initialize", {
    appCapabilities: {},
    appInfo: { name: "fault report", version: "1" },
    protocolVersion: "2026-01-26",
  }).then(
    () => send({ method: "ui/notifications/initialized", params: {} }),
    (error) => {
      view.textContent = `The host did not accept the view: ${error.message}`;
    }
  );
})();
