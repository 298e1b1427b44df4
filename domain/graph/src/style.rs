//! Colours and type. Every colour is also written as a presentation attribute, so the
//! picture looks the same where the `<style>` element is dropped; the classes let a page
//! restyle it (attributes lose to any CSS rule).

use gatehouse_events::NodeStatus;

pub(crate) const BACKGROUND: &str = "#ffffff";
pub(crate) const TEXT: &str = "#111827";
pub(crate) const MUTED: &str = "#4b5563";
pub(crate) const NEEDS: &str = "#64748b";
pub(crate) const SEND_BACK: &str = "#7c3aed";
pub(crate) const FONT: &str = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif";

/// Scoped under the root's class: inline in HTML, a `<style>` in an SVG styles the whole
/// page.
pub(crate) const CSS: &str = "\
.gh-graph{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}\
.gh-graph a:hover .gh-box,.gh-graph a:focus .gh-box{stroke-width:3}\
.gh-graph a:focus-visible{outline:2px solid #2563eb}";

/// Every status, in the order the legend lists them.
pub(crate) const STATUSES: [NodeStatus; 9] = NodeStatus::ALL;
/// A box's fill and border; `None` is a node of an SOP, not of a run.
pub(crate) fn colours(status: Option<NodeStatus>) -> (&'static str, &'static str) {
    match status {
        None => ("#ffffff", "#64748b"),
        Some(NodeStatus::Pending) => ("#f3f4f6", "#9ca3af"),
        Some(NodeStatus::Ready) => ("#eef2ff", "#6366f1"),
        Some(NodeStatus::Dispatched) => ("#e0f2fe", "#0284c7"),
        Some(NodeStatus::Running) => ("#dbeafe", "#2563eb"),
        Some(NodeStatus::WaitingApproval) => ("#fef3c7", "#d97706"),
        Some(NodeStatus::Succeeded) => ("#dcfce7", "#16a34a"),
        Some(NodeStatus::Failed) => ("#fee2e2", "#dc2626"),
        Some(NodeStatus::Skipped) => ("#fafaf9", "#a8a29e"),
        Some(NodeStatus::Cancelled) => ("#e7e5e4", "#57534e"),
    }
}

/// Skipped nodes get a dashed border, so they differ from cancelled ones by more than
/// a shade.
pub(crate) fn border_dashes(status: Option<NodeStatus>) -> Option<&'static str> {
    (status == Some(NodeStatus::Skipped)).then_some("4 3")
}

/// The status as people read it: `waiting approval`.
pub(crate) fn label(status: NodeStatus) -> String {
    status.as_str().replace('_', " ")
}
