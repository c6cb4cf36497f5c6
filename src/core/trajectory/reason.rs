//! Why an order edge exists: the kind written in `order.edges[].reasons[].kind`.
//!
//! The dependency rules of `engine::history::dependency` produce [`DependencyKind`]s;
//! imported orders say where they came from (`annotated`, `historian`). The kind is
//! stored as its snake_case name, and a name this build does not know (a trajectory
//! written by another tool or version) is kept as written, so reading and writing a
//! trajectory never changes its text.

use serde::{Deserialize, Serialize};

/// A dependency rule's kind, as written in `reasons[].kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DependencyKind {
    /// Definition → use.
    DefUse,
    /// Signature change → call site.
    SignatureCall,
    /// Import → use in the same file.
    ImportUse,
    /// Definition → its import elsewhere.
    DefImport,
    /// The same change in several places.
    Clone,
    /// Test ↔ implementation.
    TestImpl,
    /// Deleted here, inserted there.
    Move,
    /// A language server resolved a use in one edit to a definition in another.
    LspDefUse,
    /// A language server found a reference, in one edit, to a definition another edit
    /// adds or changes (`textDocument/references`).
    LspReference,
    /// Two edits of one function introduce the same new compound name.
    SharedName,
    /// A call passes a keyword argument whose parameter another edit changed or uses.
    ArgumentParameter,
    /// A docstring or comment names what another edit of the function changed.
    DocImpl,
    /// A pytest fixture changed, a test or fixture taking it as a parameter.
    Fixture,
}

impl DependencyKind {
    /// Every kind, for [`DependencyKind::parse`].
    const ALL: [DependencyKind; 13] = [
        DependencyKind::DefUse,
        DependencyKind::SignatureCall,
        DependencyKind::ImportUse,
        DependencyKind::DefImport,
        DependencyKind::Clone,
        DependencyKind::TestImpl,
        DependencyKind::Move,
        DependencyKind::LspDefUse,
        DependencyKind::LspReference,
        DependencyKind::SharedName,
        DependencyKind::ArgumentParameter,
        DependencyKind::DocImpl,
        DependencyKind::Fixture,
    ];

    /// The snake_case name used in trajectories.
    pub fn as_str(self) -> &'static str {
        match self {
            DependencyKind::DefUse => "def_use",
            DependencyKind::SignatureCall => "signature_call",
            DependencyKind::ImportUse => "import_use",
            DependencyKind::DefImport => "def_import",
            DependencyKind::Clone => "clone",
            DependencyKind::TestImpl => "test_impl",
            DependencyKind::Move => "move",
            DependencyKind::LspDefUse => "lsp_def_use",
            DependencyKind::LspReference => "lsp_reference",
            DependencyKind::SharedName => "shared_name",
            DependencyKind::ArgumentParameter => "argument_parameter",
            DependencyKind::DocImpl => "doc_impl",
            DependencyKind::Fixture => "fixture",
        }
    }

    /// The kind named `name` (its snake_case name), if any.
    pub fn parse(name: &str) -> Option<DependencyKind> {
        DependencyKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// True for kinds that fix a direction (a move's deletion comes first).
    pub fn is_directed(self) -> bool {
        self == DependencyKind::Move
    }
}

/// The kind of one reason for an order edge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ReasonKind {
    /// A dependency rule found it (derived orders).
    Dependency(DependencyKind),
    /// An EditFlow annotation related the two hunks (`annotated`).
    Annotated,
    /// A Historian order graph has the edge (`historian`).
    Historian,
    /// A kind this build does not know, kept as written.
    Other(String),
}

impl ReasonKind {
    /// The name written in trajectories.
    pub fn as_str(&self) -> &str {
        match self {
            ReasonKind::Dependency(kind) => kind.as_str(),
            ReasonKind::Annotated => "annotated",
            ReasonKind::Historian => "historian",
            ReasonKind::Other(name) => name,
        }
    }
}

impl From<DependencyKind> for ReasonKind {
    fn from(kind: DependencyKind) -> ReasonKind {
        ReasonKind::Dependency(kind)
    }
}

impl From<String> for ReasonKind {
    fn from(name: String) -> ReasonKind {
        match name.as_str() {
            "annotated" => ReasonKind::Annotated,
            "historian" => ReasonKind::Historian,
            other => DependencyKind::parse(other)
                .map(ReasonKind::Dependency)
                .unwrap_or(ReasonKind::Other(name)),
        }
    }
}

impl From<ReasonKind> for String {
    fn from(kind: ReasonKind) -> String {
        kind.as_str().to_string()
    }
}

impl std::fmt::Display for ReasonKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_as_itself_and_an_unknown_one_as_written() {
        for kind in DependencyKind::ALL {
            let json = serde_json::to_string(&ReasonKind::from(kind)).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(
                serde_json::from_str::<ReasonKind>(&json).unwrap(),
                ReasonKind::Dependency(kind)
            );
        }
        for (name, kind) in [
            ("annotated", ReasonKind::Annotated),
            ("historian", ReasonKind::Historian),
            ("temporal", ReasonKind::Other("temporal".into())),
        ] {
            let read: ReasonKind = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(read, kind);
            assert_eq!(serde_json::to_string(&read).unwrap(), format!("\"{name}\""));
        }
    }
}
