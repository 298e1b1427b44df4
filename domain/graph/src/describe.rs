//! The graph in words, for the SVG's `<desc>` and each node's `<title>`: what a screen
//! reader says, and the full text of what a box had to shorten. Plain text; the caller
//! escapes it.

use crate::model::{EdgeKind, Graph, Node};
use crate::style::label;

/// A node in one line: `Implement it (implement): agent, running, attempt 2, rework 1`.
pub(crate) fn summary(node: &Node) -> String {
    let mut parts = vec![node.kind.as_str().to_owned()];
    if let Some(state) = node.state {
        parts.push(label(state.status));
        if state.attempt > 0 {
            parts.push(format!("attempt {}", state.attempt));
        }
        if state.rework > 0 {
            parts.push(format!("rework {}", state.rework));
        }
    }
    parts.extend(node.decisions.iter().cloned());
    let name = if node.title == node.id {
        node.id.clone()
    } else {
        format!("{} ({})", node.title, node.id)
    };
    format!("{name}: {}", parts.join(", "))
}

/// The second line of a box: the kind, and the id when the title is not the id.
pub(crate) fn meta(node: &Node) -> String {
    if node.title == node.id {
        node.kind.as_str().to_owned()
    } else {
        format!("{} · {}", node.kind.as_str(), node.id)
    }
}

/// The third and fourth lines of a box, when the node has a state.
pub(crate) fn state_lines(node: &Node) -> (Option<String>, Option<String>) {
    let Some(state) = node.state else {
        return (None, None);
    };
    let mut counts = Vec::new();
    if state.attempt > 0 {
        counts.push(format!("attempt {}", state.attempt));
    }
    if state.rework > 0 {
        counts.push(format!("rework {}", state.rework));
    }
    let counts = (!counts.is_empty()).then(|| counts.join(" · "));
    (Some(label(state.status)), counts)
}

/// Every node with what it needs and where it can send work back, in the graph's order.
pub(crate) fn description(graph: &Graph) -> String {
    let n = graph.nodes.len();
    let mut out = format!(
        "{n} node{}. Work flows left to right along solid arrows",
        if n == 1 { "" } else { "s" }
    );
    if graph.edges.iter().any(|e| e.kind == EdgeKind::SendBack) {
        out.push_str("; dashed arrows go back to where work can be sent for rework");
    }
    out.push('.');
    for node in &graph.nodes {
        out.push(' ');
        out.push_str(&summary(node));
        for (kind, said) in [
            (EdgeKind::Needs, "needs"),
            (EdgeKind::SendBack, "sends back to"),
        ] {
            let ends: Vec<&str> = (graph.edges.iter())
                .filter(|e| e.kind == kind)
                .filter_map(|e| match kind {
                    EdgeKind::Needs => (e.to == node.id).then_some(e.from.as_str()),
                    EdgeKind::SendBack => (e.from == node.id).then_some(e.to.as_str()),
                })
                .collect();
            if !ends.is_empty() {
                out.push_str(&format!("; {said} {}", ends.join(", ")));
            }
        }
        out.push('.');
    }
    out
}

/// An edge's tooltip.
pub(crate) fn edge_title(kind: EdgeKind, from: &Node, to: &Node) -> String {
    match kind {
        EdgeKind::Needs => format!("{} needs {}", to.id, from.id),
        EdgeKind::SendBack => format!("{} can send work back to {}", from.id, to.id),
    }
}
