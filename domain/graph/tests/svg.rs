//! The SVG document: what it shows, and that nothing from the SOP file gets out unescaped.

mod common;

use common::well_formed;
use gatehouse_graph::{
    Edge, EdgeKind, Graph, Kind, Node, NodeState, NodeStatus, SvgOptions, svg, svg_with,
};

fn two_nodes() -> Graph {
    let mut g = Graph::new("Check & confirm");
    g.nodes
        .push(Node::new("report", "Write the report", Kind::Script));
    g.nodes
        .push(Node::new("confirm", "A lead confirms", Kind::Gate));
    g.edges
        .push(Edge::new("report", "confirm", EdgeKind::Needs));
    g.edges
        .push(Edge::new("confirm", "report", EdgeKind::SendBack));
    g
}

#[test]
fn a_small_run_draws_as_a_whole_document() {
    let mut g = two_nodes();
    let done = NodeState {
        status: NodeStatus::Succeeded,
        attempt: 2,
        rework: 1,
    };
    g.set_state("report", done);
    g.set_state("confirm", NodeState::new(NodeStatus::WaitingApproval));
    let doc = svg(&g);
    well_formed(&doc).expect("well-formed XML");
    insta::assert_snapshot!(doc, @r##"
    <svg xmlns="http://www.w3.org/2000/svg" class="gh-graph" width="440" height="156" viewBox="0 0 440 156" role="img" aria-labelledby="gh-graph-title gh-graph-desc" font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">
    <title id="gh-graph-title">Check &amp; confirm</title>
    <desc id="gh-graph-desc">2 nodes. Work flows left to right along solid arrows; dashed arrows go back to where work can be sent for rework. Write the report (report): script, succeeded, attempt 2, rework 1. A lead confirms (confirm): gate, waiting approval; needs report; sends back to report.</desc>
    <style>.gh-graph{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}.gh-graph a:hover .gh-box,.gh-graph a:focus .gh-box{stroke-width:3}.gh-graph a:focus-visible{outline:2px solid #2563eb}</style>
    <defs>
    <marker id="gh-graph-needs" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker>
    <marker id="gh-graph-send-back" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#7c3aed"/></marker>
    </defs>
    <rect class="gh-bg" width="440" height="156" fill="#ffffff"/>
    <g class="gh-edges">
    <path class="gh-edge gh-needs" d="M196 47 L244 47" fill="none" stroke="#64748b" stroke-width="1.5" marker-end="url(#gh-graph-needs)"><title>confirm needs report</title></path>
    <path class="gh-edge gh-send-back" d="M244 57 L196 57" fill="none" stroke="#7c3aed" stroke-width="1.5" stroke-dasharray="6 4" marker-end="url(#gh-graph-send-back)"><title>confirm can send work back to report</title></path>
    </g>
    <g class="gh-nodes">
    <a href="#node-report"><g class="gh-node gh-kind-script gh-status-succeeded"><title>Write the report (report): script, succeeded, attempt 2, rework 1</title><rect class="gh-box" x="16" y="16" width="180" height="72" rx="6" fill="#dcfce7" stroke="#16a34a" stroke-width="1.5"/><text class="gh-node-title" x="26" y="34" font-size="13" font-weight="600" fill="#111827">Write the report</text><text class="gh-node-meta" x="26" y="49" font-size="11" font-weight="400" fill="#4b5563">script · report</text><text class="gh-node-status" x="26" y="64" font-size="11" font-weight="600" fill="#111827">succeeded</text><text class="gh-node-counts" x="26" y="79" font-size="11" font-weight="400" fill="#4b5563">attempt 2 · rework 1</text></g></a>
    <a href="#node-confirm"><g class="gh-node gh-kind-gate gh-status-waiting_approval"><title>A lead confirms (confirm): gate, waiting approval</title><rect class="gh-box" x="244" y="16" width="180" height="72" rx="6" fill="#fef3c7" stroke="#d97706" stroke-width="1.5"/><text class="gh-node-title" x="254" y="41" font-size="13" font-weight="600" fill="#111827">A lead confirms</text><text class="gh-node-meta" x="254" y="56" font-size="11" font-weight="400" fill="#4b5563">gate · confirm</text><text class="gh-node-status" x="254" y="71" font-size="11" font-weight="600" fill="#111827">waiting approval</text></g></a>
    </g>
    <g class="gh-legend" font-size="11" fill="#111827">
    <path d="M16 107 L44 107" fill="none" stroke="#64748b" stroke-width="1.5" marker-end="url(#gh-graph-needs)"/><text x="50" y="111">needs</text>
    <path d="M99 107 L127 107" fill="none" stroke="#7c3aed" stroke-width="1.5" stroke-dasharray="6 4" marker-end="url(#gh-graph-send-back)"/><text x="133" y="111">sends work back</text>
    <rect x="245" y="100" width="14" height="14" rx="3" fill="#fef3c7" stroke="#d97706"/><text x="265" y="111">waiting approval</text>
    <rect x="16" y="122" width="14" height="14" rx="3" fill="#dcfce7" stroke="#16a34a"/><text x="36" y="133">succeeded</text>
    </g>
    </svg>
    "##);
}

#[test]
fn hostile_ids_and_titles_come_out_escaped() {
    let evil = "<script>alert(\"x\")</script> & 'q' ]]> \u{1}\u{202e}";
    let id = r#"<i>&"q"'"#;
    let mut g = Graph::new(evil);
    g.nodes.push(Node::new(id, evil, Kind::Agent));
    g.nodes.push(Node::new(evil, evil, Kind::Script));
    g.edges.push(Edge::new(id, evil, EdgeKind::Needs));
    g.edges.push(Edge::new(evil, id, EdgeKind::SendBack));
    g.set_state(id, NodeState::new(NodeStatus::Running));
    let doc = svg(&g);
    well_formed(&doc).expect("well-formed XML");
    assert!(!doc.contains("<script") && !doc.contains("<i>"), "{doc}");
    assert!(!doc.contains("'q'") && !doc.contains('\u{1}'));
    assert!(doc.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"));
    // The default link carries the id, escaped too; an id with spaces gets no link.
    assert!(doc.contains(r##"<a href="#node-&lt;i&gt;&amp;&quot;q&quot;&#39;">"##));
    assert_eq!(doc.matches("<a ").count(), 1);
}

#[test]
fn links_that_could_run_code_are_dropped() {
    let mut g = two_nodes();
    g.set_href("report", Some("javascript:alert(1)".into()));
    g.set_href("confirm", Some("/runs/7?x=1&y=2#node-confirm".into()));
    let doc = svg(&g);
    assert!(!doc.contains("javascript"));
    assert!(doc.contains(r##"<a href="/runs/7?x=1&amp;y=2#node-confirm">"##));
    assert_eq!(doc.matches("<a ").count(), 1);
}

#[test]
fn send_back_edges_are_dashed_and_needs_edges_solid() {
    let doc = svg(&two_nodes());
    let edge = |class: &str| {
        (doc.lines())
            .find(|l| l.starts_with(&format!(r#"<path class="gh-edge {class}""#)))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    assert!(edge("gh-send-back").contains(r#"stroke-dasharray="6 4""#));
    assert!(edge("gh-send-back").contains("url(#gh-graph-send-back)"));
    assert!(!edge("gh-needs").contains("stroke-dasharray"));
    assert!(edge("gh-needs").contains("url(#gh-graph-needs)"));
}

#[test]
fn every_status_is_written_out_not_only_coloured() {
    let all = NodeStatus::ALL;
    let mut g = Graph::new("all");
    for (i, status) in all.into_iter().enumerate() {
        let id = format!("n{i}");
        g.nodes.push(Node::new(&id, &id, Kind::Script));
        g.set_state(&id, NodeState::new(status));
    }
    let doc = svg(&g);
    for status in all {
        let label = status.as_str().replace('_', " ");
        let text = format!(r##"font-weight="600" fill="#111827">{label}</text>"##);
        assert!(doc.contains(&text), "{label} missing");
        assert!(doc.contains(&format!("gh-status-{}", status.as_str())));
    }
}

#[test]
fn counts_show_only_when_above_zero() {
    let mut g = two_nodes();
    g.set_state("report", NodeState::new(NodeStatus::Running));
    assert!(!svg(&g).contains("attempt"));
    g.set_state(
        "report",
        NodeState {
            status: NodeStatus::Running,
            attempt: 3,
            rework: 0,
        },
    );
    let doc = svg(&g);
    assert!(doc.contains(">attempt 3</text>"));
    assert!(!doc.contains("rework 0") && !doc.contains("· rework"));
}

/// The text of every `<text class="gh-node-{class}">` in `doc`, in order.
fn texts(doc: &str, class: &str) -> Vec<String> {
    doc.split(&format!(r#"class="gh-node-{class}""#))
        .skip(1)
        .filter_map(|s| s.split('>').nth(1))
        .filter_map(|s| s.split('<').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn long_titles_wrap_over_lines_with_the_full_text_in_the_tooltip() {
    let long = "Run the whole integration suite against every supported database";
    let mut g = Graph::new("t");
    g.nodes.push(Node::new("it", long, Kind::Script));
    g.nodes.push(Node::new("short", "Ship", Kind::Script));
    g.set_state(
        "it",
        NodeState {
            status: NodeStatus::Running,
            attempt: 2,
            rework: 0,
        },
    );
    let doc = svg(&g);
    assert!(doc.contains(&format!(
        "<title>{long} (it): script, running, attempt 2</title>"
    )));
    let shown = texts(&doc, "title");
    // Three lines for the long title (the last cut), one for the short.
    assert_eq!(shown.len(), 4, "{shown:?}");
    assert!(shown[0].starts_with("Run the whole"), "{shown:?}");
    assert!(
        !shown[0].ends_with('…') && !shown[1].ends_with('…'),
        "{shown:?}"
    );
    assert!(shown[2].ends_with('…'), "{shown:?}");
    let joined = shown[..3].join(" ");
    assert!(long.starts_with(joined.trim_end_matches('…')), "{joined}");
    // Both boxes are as tall as the long title and the state need: six lines.
    let heights: Vec<&str> = doc
        .split(r#"class="gh-box""#)
        .skip(1)
        .filter_map(|s| s.split(r#"height=""#).nth(1))
        .filter_map(|s| s.split('"').next())
        .collect();
    assert_eq!(heights.len(), 2);
    assert_eq!(heights[0], heights[1]);
    assert!(heights[0].parse::<i32>().unwrap() > 72, "{heights:?}");
}

#[test]
fn a_title_of_twenty_odd_letters_is_not_cut() {
    let title = "Review the release notes draft";
    let mut g = Graph::new("t");
    g.nodes.push(Node::new("review", title, Kind::Gate));
    let doc = svg(&g);
    assert_eq!(texts(&doc, "title").join(" "), title);
    assert!(!doc.contains('…'), "{doc}");
}

#[test]
fn a_gate_shows_its_decisions_in_its_box() {
    let mut g = two_nodes();
    g.set_state("confirm", NodeState::new(NodeStatus::Succeeded));
    assert!(g.set_decisions(
        "confirm",
        vec!["sent back by ana".into(), "approved by <bo>".into()]
    ));
    assert!(!g.set_decisions("nowhere", Vec::new()));
    let doc = svg(&g);
    well_formed(&doc).expect("well-formed XML");
    assert_eq!(
        texts(&doc, "decision"),
        ["sent back by ana", "approved by &lt;bo&gt;"]
    );
    assert!(doc.contains(
        "A lead confirms (confirm): gate, succeeded, sent back by ana, approved by &lt;bo&gt;"
    ));
    // Many decisions: the last line counts the rest.
    g.set_decisions(
        "confirm",
        (0..5).map(|i| format!("sent back by p{i}")).collect(),
    );
    let shown = texts(&svg(&g), "decision");
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert_eq!(shown[2], "and 3 more decisions");
}

#[test]
fn ids_take_the_prefix_so_several_pictures_share_a_page() {
    let options = SvgOptions {
        id_prefix: "run 7\"".into(),
        legend: false,
    };
    let doc = svg_with(&two_nodes(), &options);
    assert!(doc.contains(r#"aria-labelledby="run-7--title run-7--desc""#));
    assert!(doc.contains("url(#run-7--send-back)"));
    assert!(!doc.contains("gh-legend"));
    assert!(!doc.contains("gh-graph-"));
}

#[test]
fn the_document_is_self_contained() {
    let doc = svg(&two_nodes());
    assert!(doc.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg""#));
    for banned in [
        "<script",
        "<image",
        "<foreignObject",
        "@import",
        "url(http",
        " on",
    ] {
        assert!(!doc.contains(banned), "{banned}");
    }
}

#[test]
fn the_xml_check_refuses_what_it_should() {
    assert!(well_formed(r#"<a x="1"><b/>t &amp; &#39;</a>"#).is_ok());
    for bad in [
        "<a>",
        "<a></b>",
        "<a x=1/>",
        "<a>&</a>",
        "<a/><b/>",
        "<a>\u{1}</a>",
        r#"<a x="<"/>"#,
    ] {
        assert!(well_formed(bad).is_err(), "{bad}");
    }
}
