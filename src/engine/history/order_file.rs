//! External edit-order files (`nextedit derive --order-from FILE`).
//!
//! Three shapes are read, told apart by their content: an EditFlow annotation
//! (`partial_orders` of `edit_hunk_pair`s), a Historian/EditFlow order file
//! (`partial_orders` of `src`/`tgt` edges) and a Historian results file
//! (`partial_order_graph.edges`). Each becomes the [`PartialOrder`] of a commit's
//! edits through [`super::order`].

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::trajectory::PartialOrder;

use super::HistoryError;
use super::order::{AnnotatedPair, HistorianEdge, order_from_editflow, order_from_historian};

/// Why an order file gave no order.
#[derive(Debug, thiserror::Error)]
pub enum OrderFileError {
    /// The file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is none of the known shapes.
    #[error("{} is neither an EditFlow annotation nor a Historian order file", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// Why parsing failed.
        source: serde_json::Error,
    },
    /// The pairs or edges do not fit the commit's edits.
    #[error(transparent)]
    Order(#[from] HistoryError),
}

/// The `partial_orders` list: annotated hunk pairs or Historian edges.
#[derive(Deserialize)]
#[serde(untagged)]
enum ExternalPairs {
    EditFlow(Vec<AnnotatedPair>),
    Historian(Vec<HistorianEdge>),
}

/// A Historian results file's `partial_order_graph` (`{nodes, edges: [{src, tgt}]}`).
#[derive(Deserialize)]
struct HistorianGraph {
    edges: Vec<HistorianEdge>,
}

/// The whole file, in one of its shapes.
#[derive(Deserialize)]
#[serde(untagged)]
enum ExternalOrderFile {
    Pairs { partial_orders: ExternalPairs },
    Graph { partial_order_graph: HistorianGraph },
}

/// The order `path` gives to a commit of `count` edits.
pub fn read_order_file(path: &Path, count: usize) -> Result<PartialOrder, OrderFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| OrderFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_order_file(&text, path, count)
}

/// The order the text of the order file `path` gives to a commit of `count` edits.
fn parse_order_file(text: &str, path: &Path, count: usize) -> Result<PartialOrder, OrderFileError> {
    let file: ExternalOrderFile =
        serde_json::from_str(text).map_err(|source| OrderFileError::Shape {
            path: path.to_owned(),
            source,
        })?;
    let order = match file {
        ExternalOrderFile::Pairs {
            partial_orders: ExternalPairs::EditFlow(pairs),
        } => order_from_editflow(count, &pairs)?,
        ExternalOrderFile::Pairs {
            partial_orders: ExternalPairs::Historian(edges),
        }
        | ExternalOrderFile::Graph {
            partial_order_graph: HistorianGraph { edges },
        } => order_from_historian(count, &edges)?,
    };
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_shapes_give_the_same_order() {
        let editflow = r#"{"partial_orders": [{"edit_hunk_pair": [0, 1], "edit_order": "0 before 1", "reason": "r"}]}"#;
        let historian = r#"{"partial_orders": [{"src": 0, "tgt": 1}]}"#;
        let graph =
            r#"{"partial_order_graph": {"nodes": [0, 1], "edges": [{"src": 0, "tgt": 1}]}}"#;
        let orders: Vec<PartialOrder> = [editflow, historian, graph]
            .iter()
            .map(|text| parse_order_file(text, Path::new("o.json"), 2).unwrap())
            .collect();
        assert_eq!(orders[0].edges.len(), 1);
        assert_eq!(orders[1].edges.len(), 1);
        assert_eq!(orders[1], orders[2]);
    }

    #[test]
    fn another_document_is_named_as_such() {
        let error = parse_order_file("{}", Path::new("o.json"), 2).unwrap_err();
        assert!(matches!(error, OrderFileError::Shape { .. }), "{error:?}");
    }
}
