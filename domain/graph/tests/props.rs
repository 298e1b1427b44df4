//! Properties of the layout over random DAGs: everything inside the picture, no two
//! boxes overlapping, no edge through a box, `needs` edges flowing left to right, and the
//! same output every time. Titles are arbitrary strings, so the SVG is checked too.

mod common;

use std::collections::BTreeSet;

use common::well_formed;
use gatehouse_graph::{
    Edge, EdgeKind, Graph, Kind, Layout, Node, NodeState, NodeStatus, Rect, layout, svg,
};
use proptest::prelude::*;

const STATUSES: [NodeStatus; 9] = NodeStatus::ALL;
/// Up to 30 nodes; `needs` edges only from lower to higher indices (so a DAG), send-back
/// edges only to a node upstream, as SOP validation demands.
fn dags() -> impl Strategy<Value = Graph> {
    (1usize..=30).prop_flat_map(|n| {
        let pairs = prop::collection::vec((0..n, 0..n), 0..50);
        let backs = prop::collection::vec((0..n, 0..n), 0..8);
        let titles = prop::collection::vec(any::<String>(), n);
        let states = prop::collection::vec(prop::option::of((0usize..9, 0u32..5, 0u32..3)), n);
        (pairs, backs, titles, states).prop_map(move |(pairs, backs, titles, states)| {
            let mut g = Graph::new("random");
            for (i, (title, state)) in titles.into_iter().zip(states).enumerate() {
                let id = format!("n{i}");
                let kind = [
                    Kind::Script,
                    Kind::Agent,
                    Kind::Gate,
                    Kind::Sop,
                    Kind::Deliver,
                ][i % 5];
                g.nodes.push(Node::new(&id, title, kind));
                if let Some((s, attempt, rework)) = state {
                    g.set_state(
                        &id,
                        NodeState {
                            status: STATUSES[s],
                            attempt,
                            rework,
                        },
                    );
                }
            }
            let needs: BTreeSet<(usize, usize)> = (pairs.into_iter())
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (a.min(b), a.max(b)))
                .collect();
            for &(a, b) in &needs {
                g.edges
                    .push(Edge::new(format!("n{a}"), format!("n{b}"), EdgeKind::Needs));
            }
            let backs: BTreeSet<(usize, usize)> = backs.into_iter().collect();
            for (from, to) in backs {
                if upstream(&needs, from).contains(&to) {
                    g.edges.push(Edge::new(
                        format!("n{from}"),
                        format!("n{to}"),
                        EdgeKind::SendBack,
                    ));
                }
            }
            g
        })
    })
}

fn upstream(needs: &BTreeSet<(usize, usize)>, node: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![node];
    while let Some(n) = todo.pop() {
        for &(a, b) in needs {
            if b == n && seen.insert(a) {
                todo.push(a);
            }
        }
    }
    seen
}

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.x < b.right() && b.x < a.right() && a.y < b.bottom() && b.y < a.bottom()
}

fn inside(l: &Layout, x: i32, y: i32) -> bool {
    (0..=l.width).contains(&x) && (0..=l.height).contains(&y)
}

/// Inside the picture, no two boxes overlapping, no edge through a box.
fn holds_together(l: &Layout) -> Result<(), TestCaseError> {
    for b in &l.nodes {
        prop_assert!(inside(l, b.rect.x, b.rect.y) && inside(l, b.rect.right(), b.rect.bottom()));
    }
    for (i, a) in l.nodes.iter().enumerate() {
        for b in &l.nodes[i + 1..] {
            prop_assert!(!overlaps(&a.rect, &b.rect), "{:?} overlaps {:?}", a, b);
        }
    }
    for e in &l.edges {
        for p in &e.points {
            prop_assert!(inside(l, p.x, p.y));
        }
        for w in e.points.windows(2) {
            // Each step stays within the rectangle its ends span: that must be clear.
            let span = Rect {
                x: w[0].x.min(w[1].x),
                y: w[0].y.min(w[1].y),
                width: (w[0].x - w[1].x).abs().max(1),
                height: (w[0].y - w[1].y).abs().max(1),
            };
            for b in &l.nodes {
                let r = b.rect;
                let inner = Rect {
                    x: r.x + 1,
                    y: r.y + 1,
                    width: r.width - 2,
                    height: r.height - 2,
                };
                prop_assert!(!overlaps(&span, &inner), "edge {:?} crosses {:?}", e, b);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn layouts_of_random_dags_hold_together(g in dags()) {
        let l = layout(&g);
        holds_together(&l)?;
        // Every edge is drawn, since all are valid, and `needs` go left to right.
        prop_assert_eq!(l.edges.len(), g.edges.len());
        for e in l.edges.iter().filter(|e| e.kind == EdgeKind::Needs) {
            prop_assert!(l.nodes[e.from].layer < l.nodes[e.to].layer);
        }
    }

    #[test]
    fn any_edges_at_all_still_lay_out(g in dags(), extra in prop::collection::vec((0usize..32, 0usize..32, any::<bool>()), 0..20)) {
        // Cycles, self-loops, unknown ends, send-backs within a layer or forwards.
        let mut g = g;
        for (a, b, back) in extra {
            let kind = if back { EdgeKind::SendBack } else { EdgeKind::Needs };
            g.edges.push(Edge::new(format!("n{a}"), format!("n{b}"), kind));
        }
        holds_together(&layout(&g))?;
    }

    #[test]
    fn output_is_deterministic_and_well_formed(g in dags()) {
        prop_assert_eq!(layout(&g), layout(&g.clone()));
        let doc = svg(&g);
        prop_assert_eq!(&doc, &svg(&g));
        prop_assert!(well_formed(&doc).is_ok(), "{:?}", well_formed(&doc));
        let l = layout(&g);
        let view = r#"viewBox="0 0 "#;
        let dims: Vec<i32> = doc[doc.find(view).unwrap_or(0) + view.len()..]
            .split('"').next().unwrap_or_default()
            .split(' ').filter_map(|v| v.parse().ok()).collect();
        prop_assert!(dims.len() == 2 && dims[0] >= l.width && dims[1] >= l.height);
    }
}
