//! What is drawn: nodes with an optional run state, and the two kinds of edge.

use std::collections::BTreeSet;

use gatehouse_events::NodeStatus;
use gatehouse_sop::{NodeKind, Sop};

/// An SOP's graph, or a run's: the SOP's nodes and edges, each node with the run's state
/// when there is a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Graph {
    /// What the picture is of (an SOP's title); the SVG's `<title>`.
    pub title: String,
    /// In the SOP's file order, which also breaks ties in the layout.
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// One step of the SOP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    pub title: String,
    pub kind: Kind,
    /// `None` when drawing an SOP rather than a run.
    pub state: Option<NodeState>,
    /// Where clicking the node goes; `None` draws it without a link. [`Node::new`] sets
    /// `#node-<id>`, so that the console can anchor to the node's section.
    pub href: Option<String>,
    /// A gate's decisions in a run, one line each as the box shows them (`approved by
    /// ana`), oldest first; empty for other nodes and for an SOP's graph.
    pub decisions: Vec<String>,
}

/// The kinds of SOP node, as labels: the graph does not need their settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Script,
    Agent,
    Gate,
    Sop,
    Deliver,
}

/// A node's state in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeState {
    pub status: NodeStatus,
    /// The attempt number (1 for the first); not shown when 0.
    pub attempt: u32,
    /// How many times work was sent back to this node; not shown when 0.
    pub rework: u32,
}

/// An edge, pointing the way work flows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    /// For `Needs`, the node needed; for `SendBack`, the gate or failing node.
    pub from: String,
    /// For `Needs`, the node that needs `from`; for `SendBack`, the node to redo.
    pub to: String,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// `to` waits for `from`: the layout's layers follow these.
    Needs,
    /// Work may go back from `from` to the earlier `to` (a gate's `send_back`, a node's
    /// `on_failure.send_back`, or a deliver node's `on_review`, `on_checks_failed` and
    /// `on_conflict`); drawn dashed, against the flow.
    SendBack,
}

impl Graph {
    /// An empty graph titled `title`, for building by hand.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Self::default()
        }
    }

    /// The SOP's nodes in file order, with no run state and the default links. Each edge
    /// once, even where the YAML repeats one.
    pub fn of_sop(sop: &Sop) -> Self {
        let mut graph = Self::new(if sop.title.is_empty() {
            &sop.name
        } else {
            &sop.title
        });
        let mut seen = BTreeSet::new();
        for node in &sop.nodes {
            graph
                .nodes
                .push(Node::new(&node.id, &node.title, Kind::of(&node.kind)));
            let needs = node.needs.iter().map(|n| (n, &node.id, EdgeKind::Needs));
            let gate_back = match &node.kind {
                NodeKind::Gate(gate) => gate.send_back.as_slice(),
                _ => &[],
            };
            let feedback_back: Vec<&String> = match &node.kind {
                NodeKind::Deliver { feedback, .. } => {
                    feedback.rules().map(|(_, rule)| &rule.send_back).collect()
                }
                _ => Vec::new(),
            };
            let back = gate_back
                .iter()
                .chain(node.on_failure.iter().map(|f| &f.send_back))
                .chain(feedback_back)
                .map(|to| (&node.id, to, EdgeKind::SendBack));
            for (from, to, kind) in needs.chain(back) {
                let edge = Edge::new(from, to, kind);
                if seen.insert(edge.clone()) {
                    graph.edges.push(edge);
                }
            }
        }
        graph
    }

    /// Sets the run state of node `id`; false when there is no such node.
    pub fn set_state(&mut self, id: &str, state: NodeState) -> bool {
        self.node_mut(id).map(|n| n.state = Some(state)).is_some()
    }

    /// Sets the decisions shown in node `id`'s box; false when there is no such node.
    pub fn set_decisions(&mut self, id: &str, decisions: Vec<String>) -> bool {
        self.node_mut(id).map(|n| n.decisions = decisions).is_some()
    }

    /// Sets where node `id` links to (`None`: no link); false when there is no such node.
    pub fn set_href(&mut self, id: &str, href: Option<String>) -> bool {
        self.node_mut(id).map(|n| n.href = href).is_some()
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.id == id)
    }
}

impl Node {
    /// A node without run state, linking to `#node-<id>`.
    pub fn new(id: impl Into<String>, title: impl Into<String>, kind: Kind) -> Self {
        let id = id.into();
        Self {
            href: Some(format!("#node-{id}")),
            title: title.into(),
            id,
            kind,
            state: None,
            decisions: Vec::new(),
        }
    }
}

impl Kind {
    pub fn of(kind: &NodeKind) -> Self {
        match kind {
            NodeKind::Script { .. } => Self::Script,
            NodeKind::Agent { .. } => Self::Agent,
            NodeKind::Gate(_) => Self::Gate,
            NodeKind::Sop { .. } => Self::Sop,
            NodeKind::Deliver { .. } => Self::Deliver,
        }
    }

    /// The YAML name, as shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Script => "script",
            Self::Agent => "agent",
            Self::Gate => "gate",
            Self::Sop => "sop",
            Self::Deliver => "deliver",
        }
    }
}

impl Edge {
    pub fn new(from: impl Into<String>, to: impl Into<String>, kind: EdgeKind) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            kind,
        }
    }
}

impl NodeState {
    /// A state with no attempt or rework to show.
    pub fn new(status: NodeStatus) -> Self {
        Self {
            status,
            attempt: 0,
            rework: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOP: &str = "\
name: ship
title: Ship it
nodes:
  build: { kind: script, run: make }
  child: { kind: sop, sop: other, needs: [build] }
  code:
    kind: agent
    title: Write the code
    role: developer
    prompt: go
    needs: [build]
  test:
    kind: script
    run: make test
    needs: [code, child]
    on_failure: { send_back: code, max: 2 }
  accept:
    kind: gate
    needs: [test]
    approvers: [group:leads]
    send_back: [code, build]
  deliver:
    kind: deliver
    mode: pr
    needs: [accept]
    on_review: { send_back: code }
    on_checks_failed: { send_back: code, max: 2 }
    on_conflict: { send_back: build }
";

    #[test]
    fn an_sop_gives_its_nodes_needs_and_send_back_edges() {
        let sop = gatehouse_sop::parse("sops/ship.yaml", SOP).expect("valid SOP");
        let graph = Graph::of_sop(&sop);
        assert_eq!(graph.title, "Ship it");
        let nodes: Vec<String> = (graph.nodes.iter())
            .map(|n| format!("{} {:?} {:?} {:?}", n.id, n.title, n.kind, n.href))
            .collect();
        assert_eq!(
            nodes,
            [
                r##"build "build" Script Some("#node-build")"##,
                r##"child "child" Sop Some("#node-child")"##,
                r##"code "Write the code" Agent Some("#node-code")"##,
                r##"test "test" Script Some("#node-test")"##,
                r##"accept "accept" Gate Some("#node-accept")"##,
                r##"deliver "deliver" Deliver Some("#node-deliver")"##,
            ]
        );
        let edges: Vec<String> = (graph.edges.iter())
            .map(|e| format!("{} -{:?}-> {}", e.from, e.kind, e.to))
            .collect();
        assert_eq!(
            edges,
            [
                "build -Needs-> child",
                "build -Needs-> code",
                "code -Needs-> test",
                "child -Needs-> test",
                "test -SendBack-> code",
                "test -Needs-> accept",
                "accept -SendBack-> code",
                "accept -SendBack-> build",
                "accept -Needs-> deliver",
                "deliver -SendBack-> code",
                "deliver -SendBack-> build",
            ]
        );
    }

    #[test]
    fn states_and_links_are_set_by_id() {
        let mut graph = Graph::new("g");
        graph.nodes.push(Node::new("a", "A", Kind::Script));
        let state = NodeState {
            status: NodeStatus::Failed,
            attempt: 2,
            rework: 1,
        };
        assert!(graph.set_state("a", state));
        assert!(!graph.set_state("missing", state));
        assert!(graph.set_href("a", None));
        let node = graph.node("a").expect("node a");
        assert_eq!((node.state, node.href.as_deref()), (Some(state), None));
    }
}
