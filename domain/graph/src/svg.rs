//! The layout drawn as one self-contained SVG document: no scripts, no external
//! resources, every piece of text from the SOP escaped.

use std::collections::BTreeSet;
use std::fmt::{self, Display, Formatter};

use crate::describe::{description, edge_title, summary};
use crate::layout::{Layout, MARGIN, Point, Rect, layout};
use crate::lines::{LINE_HEIGHT, LINE_PX, PADDING, box_lines};
use crate::model::{EdgeKind, Graph, Node};
use crate::style::{self, BACKGROUND, CSS, FONT, MUTED, NEEDS, SEND_BACK, TEXT};
use crate::text::{em, escape, id_prefix, safe_href};

const LEGEND_ROW: i32 = 22;

/// How to draw. The defaults suit one picture per page or a file of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvgOptions {
    /// Starts the document's ids (its markers, title and description). Give each
    /// picture on one HTML page its own: inline SVGs share the page's ids. Characters
    /// other than ASCII letters, digits, `-` and `_` become `-`.
    pub id_prefix: String,
    /// Whether to draw a key to the edges and the statuses present below the graph.
    pub legend: bool,
}

impl Default for SvgOptions {
    fn default() -> Self {
        Self {
            id_prefix: "gh-graph".into(),
            legend: true,
        }
    }
}

/// `graph` as an SVG document, with the default options.
///
/// ```
/// use gatehouse_graph::{Graph, Kind, Node, NodeState, NodeStatus, svg};
///
/// let mut graph = Graph::new("Deploy");
/// graph.nodes.push(Node::new("build", "Build <it>", Kind::Script));
/// graph.set_state("build", NodeState::new(NodeStatus::Running));
/// let doc = svg(&graph);
/// assert!(doc.starts_with("<svg xmlns="));
/// assert!(doc.contains("Build &lt;it&gt;") && doc.contains(">running</text>"));
/// ```
pub fn svg(graph: &Graph) -> String {
    svg_with(graph, &SvgOptions::default())
}

/// `graph` as an SVG document. It begins at `<svg` (no XML declaration), so it can be
/// written to a file or put as-is into an HTML page.
pub fn svg_with(graph: &Graph, options: &SvgOptions) -> String {
    let layout = layout(graph);
    let legend = options.legend.then(|| Legend::of(graph, &layout));
    Document {
        graph,
        width: (layout.width).max(legend.as_ref().map_or(0, |l| l.width)),
        height: layout.height + legend.as_ref().map_or(0, |l| l.height),
        layout,
        legend,
        id: id_prefix(&options.id_prefix),
    }
    .to_string()
}

struct Document<'a> {
    graph: &'a Graph,
    layout: Layout,
    legend: Option<Legend>,
    width: i32,
    height: i32,
    id: String,
}

impl Display for Document<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (w, h, id) = (self.width, self.height, &self.id);
        let title = if self.graph.title.is_empty() {
            "SOP graph"
        } else {
            &self.graph.title
        };
        writeln!(
            f,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="gh-graph" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{id}-title {id}-desc" font-family="{FONT}">"#
        )?;
        writeln!(f, r#"<title id="{id}-title">{}</title>"#, escape(title))?;
        writeln!(
            f,
            r#"<desc id="{id}-desc">{}</desc>"#,
            escape(&description(self.graph))
        )?;
        writeln!(f, "<style>{CSS}</style>")?;
        writeln!(f, "<defs>")?;
        for (name, colour) in [("needs", NEEDS), ("send-back", SEND_BACK)] {
            writeln!(
                f,
                r#"<marker id="{id}-{name}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>"#
            )?;
        }
        writeln!(f, "</defs>")?;
        writeln!(
            f,
            r#"<rect class="gh-bg" width="{w}" height="{h}" fill="{BACKGROUND}"/>"#
        )?;
        writeln!(f, r#"<g class="gh-edges">"#)?;
        for edge in &self.layout.edges {
            let (from, to) = (&self.graph.nodes[edge.from], &self.graph.nodes[edge.to]);
            let (class, colour, dashes) = match edge.kind {
                EdgeKind::Needs => ("needs", NEEDS, ""),
                EdgeKind::SendBack => ("send-back", SEND_BACK, r#" stroke-dasharray="6 4""#),
            };
            writeln!(
                f,
                r#"<path class="gh-edge gh-{class}" d="{}" fill="none" stroke="{colour}" stroke-width="1.5"{dashes} marker-end="url(#{id}-{class})"><title>{}</title></path>"#,
                path(&edge.points),
                escape(&edge_title(edge.kind, from, to)),
            )?;
        }
        writeln!(f, "</g>")?;
        writeln!(f, r#"<g class="gh-nodes">"#)?;
        for (node, place) in self.graph.nodes.iter().zip(&self.layout.nodes) {
            write_node(f, node, place.rect)?;
        }
        writeln!(f, "</g>")?;
        if let Some(legend) = &self.legend {
            legend.write(f, &self.id, self.layout.height)?;
        }
        writeln!(f, "</svg>")
    }
}

/// Level or plumb steps as lines, others as S-curves leaving and arriving horizontally.
fn path(points: &[Point]) -> String {
    let mut d = String::new();
    for (i, q) in points.iter().enumerate() {
        match i.checked_sub(1).map(|p| points[p]) {
            None => d.push_str(&format!("M{} {}", q.x, q.y)),
            Some(p) if p.x == q.x || p.y == q.y => d.push_str(&format!(" L{} {}", q.x, q.y)),
            Some(p) => {
                let mid = f64::from(p.x + q.x) / 2.0;
                d.push_str(&format!(" C{mid} {} {mid} {} {} {}", p.y, q.y, q.x, q.y));
            }
        }
    }
    d
}

fn write_node(f: &mut Formatter<'_>, node: &Node, rect: Rect) -> fmt::Result {
    let status = node.state.map(|s| s.status);
    let href = node.href.as_deref().and_then(safe_href);
    if let Some(href) = href {
        write!(f, r#"<a href="{}">"#, escape(href))?;
    }
    let status_class = status.map_or("none", |s| s.as_str());
    write!(
        f,
        r#"<g class="gh-node gh-kind-{} gh-status-{status_class}"><title>{}</title>"#,
        node.kind.as_str(),
        escape(&summary(node)),
    )?;
    let (fill, stroke) = style::colours(status);
    let dashes = style::border_dashes(status)
        .map(|d| format!(r#" stroke-dasharray="{d}""#))
        .unwrap_or_default();
    write!(
        f,
        r#"<rect class="gh-box" x="{}" y="{}" width="{}" height="{}" rx="6" fill="{fill}" stroke="{stroke}" stroke-width="1.5"{dashes}/>"#,
        rect.x, rect.y, rect.width, rect.height
    )?;
    let lines = box_lines(node, rect.width);
    let n = i32::try_from(lines.len()).unwrap_or(0);
    let first = rect.y + rect.height / 2 - (n - 1) * LINE_HEIGHT / 2 + 4;
    for (line, k) in lines.iter().zip(0..) {
        let colour = if matches!(line.class, "meta" | "counts" | "decision") {
            MUTED
        } else {
            TEXT
        };
        write!(
            f,
            r#"<text class="gh-node-{}" x="{}" y="{}" font-size="{}" font-weight="{}" fill="{colour}">{}</text>"#,
            line.class,
            rect.x + PADDING,
            first + k * LINE_HEIGHT,
            line.size,
            line.weight,
            escape(&line.text)
        )?;
    }
    write!(f, "</g>")?;
    if href.is_some() {
        write!(f, "</a>")?;
    }
    writeln!(f)
}

/// A key below the graph: the two kinds of edge, and a swatch per status shown.
struct Legend {
    /// (x, y of the row's middle, what)
    items: Vec<(i32, i32, Key)>,
    width: i32,
    height: i32,
}

enum Key {
    Edge(EdgeKind),
    Status(gatehouse_events::NodeStatus),
}

impl Legend {
    fn of(graph: &Graph, layout: &Layout) -> Self {
        let mut keys = vec![Key::Edge(EdgeKind::Needs)];
        if layout.edges.iter().any(|e| e.kind == EdgeKind::SendBack) {
            keys.push(Key::Edge(EdgeKind::SendBack));
        }
        let shown: BTreeSet<&str> = (graph.nodes.iter())
            .filter_map(|n| n.state.map(|s| s.status.as_str()))
            .collect();
        keys.extend(
            (style::STATUSES.into_iter())
                .filter(|s| shown.contains(s.as_str()))
                .map(Key::Status),
        );
        // Rows as wide as the graph (or a phone's screen, for a small graph).
        let room = layout.width.max(360) - MARGIN;
        let (mut x, mut row, mut width) = (MARGIN, 0, 0);
        let mut items = Vec::new();
        for key in keys {
            let w = key.width();
            if x > MARGIN && x + w > room {
                (x, row) = (MARGIN, row + 1);
            }
            items.push((x, LEGEND_ROW / 2 + row * LEGEND_ROW, key));
            x += w + 16;
            width = width.max(x - 16 + MARGIN);
        }
        let height = (row + 1) * LEGEND_ROW + MARGIN / 2;
        Self {
            items,
            width,
            height,
        }
    }

    fn write(&self, f: &mut Formatter<'_>, id: &str, top: i32) -> fmt::Result {
        writeln!(f, r#"<g class="gh-legend" font-size="11" fill="{TEXT}">"#)?;
        for (x, y, key) in &self.items {
            let y = top - MARGIN / 2 + y;
            match key {
                Key::Edge(kind) => {
                    let (class, colour, dashes, text) = match kind {
                        EdgeKind::Needs => ("needs", NEEDS, "", "needs"),
                        EdgeKind::SendBack => (
                            "send-back",
                            SEND_BACK,
                            r#" stroke-dasharray="6 4""#,
                            "sends work back",
                        ),
                    };
                    writeln!(
                        f,
                        r#"<path d="M{x} {y} L{} {y}" fill="none" stroke="{colour}" stroke-width="1.5"{dashes} marker-end="url(#{id}-{class})"/><text x="{}" y="{}">{text}</text>"#,
                        x + 28,
                        x + 34,
                        y + 4
                    )?;
                }
                Key::Status(status) => {
                    let (fill, stroke) = style::colours(Some(*status));
                    writeln!(
                        f,
                        r#"<rect x="{x}" y="{}" width="14" height="14" rx="3" fill="{fill}" stroke="{stroke}"/><text x="{}" y="{}">{}</text>"#,
                        y - 7,
                        x + 20,
                        y + 4,
                        style::label(*status)
                    )?;
                }
            }
        }
        writeln!(f, "</g>")
    }
}

impl Key {
    fn width(&self) -> i32 {
        let (lead, text) = match self {
            Self::Edge(EdgeKind::Needs) => (34, "needs".to_owned()),
            Self::Edge(EdgeKind::SendBack) => (34, "sends work back".to_owned()),
            Self::Status(s) => (20, style::label(*s)),
        };
        lead + (text.chars().map(em).sum::<f64>() * LINE_PX).ceil() as i32
    }
}
