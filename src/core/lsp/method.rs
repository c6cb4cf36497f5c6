//! LSP methods as a closed enum: every method nextedit acts on is a variant (the
//! `$/nextedit/` editor signals too), decoded once from a message's method string;
//! everything else is [`Method::Other`].
//!
//! What nextedit knows about a method (is its request a read, which reads does its
//! answer point at, does its answer propose edits, which offers does it make) is a
//! method on the enum, so adding a method means adding a row to the table below and
//! answering those questions in this file, and nowhere else.

/// Prefix of the editor-signal notifications the proxy consumes.
pub const SIGNAL_PREFIX: &str = "$/nextedit/";

/// Declares [`Method`] from one table of variants and their wire names.
macro_rules! methods {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal,)*) => {
        /// An LSP method, decoded from its name by [`Method::from_name`].
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum Method {
            $($(#[doc = $doc])* $variant,)*
            /// A `$/nextedit/…` editor signal (the full method name).
            Signal(String),
            /// Any other method (its name).
            Other(String),
        }

        impl Method {
            /// Every method with a variant of its own, for tests and listings.
            pub const KNOWN: &'static [Method] = &[$(Method::$variant,)*];

            /// The method a message names.
            pub fn from_name(name: &str) -> Method {
                Method::known(name).unwrap_or_else(|| Method::unknown(name.to_string()))
            }

            /// The method a message names, keeping the string for a signal or another method.
            pub fn from_string(name: String) -> Method {
                Method::known(&name).unwrap_or_else(|| Method::unknown(name))
            }

            fn known(name: &str) -> Option<Method> {
                match name {
                    $($name => Some(Method::$variant),)*
                    _ => None,
                }
            }

            /// The method's name on the wire.
            pub fn name(&self) -> &str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Signal(name) | Method::Other(name) => name,
                }
            }
        }
    };
}

methods! {
    /// `initialize`.
    Initialize = "initialize",
    /// `initialized`.
    Initialized = "initialized",
    /// `shutdown`.
    Shutdown = "shutdown",
    /// `exit`.
    Exit = "exit",
    /// `$/progress` (work done, or a chunk of a streamed result).
    Progress = "$/progress",
    /// `workspace/configuration` (server to client).
    Configuration = "workspace/configuration",
    /// `workspace/workspaceFolders` (server to client).
    WorkspaceFolders = "workspace/workspaceFolders",
    /// `workspace/didChangeWorkspaceFolders`.
    DidChangeWorkspaceFolders = "workspace/didChangeWorkspaceFolders",
    /// `workspace/applyEdit` (server to client: a command's edits).
    ApplyEdit = "workspace/applyEdit",
    /// `textDocument/didOpen`.
    DidOpen = "textDocument/didOpen",
    /// `textDocument/didChange`.
    DidChange = "textDocument/didChange",
    /// `textDocument/didSave`.
    DidSave = "textDocument/didSave",
    /// `textDocument/didClose`.
    DidClose = "textDocument/didClose",
    /// `textDocument/willSaveWaitUntil`.
    WillSaveWaitUntil = "textDocument/willSaveWaitUntil",
    /// `textDocument/hover`.
    Hover = "textDocument/hover",
    /// `textDocument/definition`.
    Definition = "textDocument/definition",
    /// `textDocument/declaration`.
    Declaration = "textDocument/declaration",
    /// `textDocument/typeDefinition`.
    TypeDefinition = "textDocument/typeDefinition",
    /// `textDocument/implementation`.
    Implementation = "textDocument/implementation",
    /// `textDocument/references`.
    References = "textDocument/references",
    /// `textDocument/documentHighlight`.
    DocumentHighlight = "textDocument/documentHighlight",
    /// `textDocument/documentSymbol`.
    DocumentSymbol = "textDocument/documentSymbol",
    /// `textDocument/signatureHelp`.
    SignatureHelp = "textDocument/signatureHelp",
    /// `textDocument/codeAction`.
    CodeAction = "textDocument/codeAction",
    /// `codeAction/resolve`.
    CodeActionResolve = "codeAction/resolve",
    /// `textDocument/inlayHint`.
    InlayHint = "textDocument/inlayHint",
    /// `textDocument/completion`.
    Completion = "textDocument/completion",
    /// `completionItem/resolve`.
    CompletionResolve = "completionItem/resolve",
    /// `textDocument/inlineCompletion` (LSP 3.18).
    InlineCompletion = "textDocument/inlineCompletion",
    /// `textDocument/formatting`.
    Formatting = "textDocument/formatting",
    /// `textDocument/rangeFormatting`.
    RangeFormatting = "textDocument/rangeFormatting",
    /// `textDocument/onTypeFormatting`.
    OnTypeFormatting = "textDocument/onTypeFormatting",
    /// `textDocument/rename`.
    Rename = "textDocument/rename",
}

/// Which locations a read request's answer points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerReads {
    /// `Location`, `Location[]` or `LocationLink[]` (definition, references, …).
    Locations,
    /// The hovered range, in the request's document.
    HoverRange,
    /// The highlights' ranges, in the request's document.
    Highlights,
    /// Nothing (the request position is the only read).
    Nothing,
}

/// The shape of the edits an answer proposes (the editor applies them later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerEdits {
    /// `TextEdit[]` for the request's document (formatting, format on save).
    TextEdits,
    /// A `WorkspaceEdit` (rename).
    WorkspaceEdit,
    /// `(Command | CodeAction)[]`: one alternative per action with an edit.
    CodeActions,
    /// A resolved `CodeAction` and its `edit`.
    ResolvedCodeAction,
    /// `CompletionItem[]` or `CompletionList`: one alternative per item.
    CompletionItems,
    /// A resolved `CompletionItem` (for the latest completion's document).
    ResolvedCompletionItem,
}

/// What kind of offer a request's answer (or a server's request) makes to the developer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OfferKind {
    /// A completion list's items.
    Completion,
    /// Inline completion items (ghost text).
    InlineCompletion,
    /// Code actions (with or without an edit).
    CodeAction,
    /// A rename's workspace edit.
    Rename,
    /// A `workspace/applyEdit` the server sent (a command's result).
    ApplyEdit,
}

impl OfferKind {
    /// Every kind, in a stable order.
    pub const ALL: [OfferKind; 5] = [
        OfferKind::Completion,
        OfferKind::InlineCompletion,
        OfferKind::CodeAction,
        OfferKind::Rename,
        OfferKind::ApplyEdit,
    ];

    /// Its name in the database (`offers.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            OfferKind::Completion => "completion",
            OfferKind::InlineCompletion => "inline_completion",
            OfferKind::CodeAction => "code_action",
            OfferKind::Rename => "rename",
            OfferKind::ApplyEdit => "apply_edit",
        }
    }

    /// The kind a database name stands for.
    pub fn parse(name: &str) -> Option<OfferKind> {
        OfferKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl Method {
    fn unknown(name: String) -> Method {
        if name.starts_with(SIGNAL_PREFIX) {
            Method::Signal(name)
        } else {
            Method::Other(name)
        }
    }

    /// Whether a request's position (or range, or whole document) is a read.
    pub fn is_read(&self) -> bool {
        self.answer_reads().is_some()
    }

    /// For a read request, which locations its answer points at; `None` otherwise.
    pub fn answer_reads(&self) -> Option<AnswerReads> {
        Some(match self {
            Method::Definition
            | Method::Declaration
            | Method::TypeDefinition
            | Method::Implementation
            | Method::References => AnswerReads::Locations,
            Method::Hover => AnswerReads::HoverRange,
            Method::DocumentHighlight => AnswerReads::Highlights,
            Method::DocumentSymbol
            | Method::SignatureHelp
            | Method::CodeAction
            | Method::InlayHint => AnswerReads::Nothing,
            _ => return None,
        })
    }

    /// Which edits a successful answer to this request proposes, if any.
    pub fn answer_edits(&self) -> Option<AnswerEdits> {
        Some(match self {
            Method::Formatting
            | Method::RangeFormatting
            | Method::OnTypeFormatting
            | Method::WillSaveWaitUntil => AnswerEdits::TextEdits,
            Method::Rename => AnswerEdits::WorkspaceEdit,
            Method::CodeAction => AnswerEdits::CodeActions,
            Method::CodeActionResolve => AnswerEdits::ResolvedCodeAction,
            Method::Completion => AnswerEdits::CompletionItems,
            Method::CompletionResolve => AnswerEdits::ResolvedCompletionItem,
            _ => return None,
        })
    }

    /// Which offers a successful answer to this request (or, for
    /// `workspace/applyEdit`, the server's request itself) makes, if any.
    pub fn offers(&self) -> Option<OfferKind> {
        Some(match self {
            Method::Completion => OfferKind::Completion,
            Method::InlineCompletion => OfferKind::InlineCompletion,
            Method::CodeAction => OfferKind::CodeAction,
            Method::Rename => OfferKind::Rename,
            Method::ApplyEdit => OfferKind::ApplyEdit,
            _ => return None,
        })
    }

    /// For an editor signal, its name after [`SIGNAL_PREFIX`] (`cursor`, `visibleRanges`).
    pub fn signal(&self) -> Option<&str> {
        match self {
            Method::Signal(name) => Some(&name[SIGNAL_PREFIX.len()..]),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for method in Method::KNOWN {
            assert_eq!(&Method::from_name(method.name()), method);
            assert_eq!(&Method::from_string(method.name().to_string()), method);
        }
        assert_eq!(Method::KNOWN.len(), 33);
        let signal = Method::from_name("$/nextedit/visibleRanges");
        assert_eq!(
            (signal.name(), signal.signal()),
            ("$/nextedit/visibleRanges", Some("visibleRanges"))
        );
        assert_eq!(
            Method::from_string("$/nextedit/cursor".into()),
            Method::Signal("$/nextedit/cursor".into())
        );
        let other = Method::from_name("textDocument/publishDiagnostics");
        assert_eq!(
            (other.name(), other.signal(), other.is_read()),
            ("textDocument/publishDiagnostics", None, false)
        );
        // Names are exact: no case folding, no prefix matching other than signals.
        assert_eq!(
            Method::from_name("textdocument/hover"),
            Method::Other("textdocument/hover".into())
        );
    }

    #[test]
    fn reads_and_proposals() {
        let reads: Vec<&str> = Method::KNOWN
            .iter()
            .filter(|m| m.is_read())
            .map(Method::name)
            .collect();
        assert_eq!(
            reads,
            [
                "textDocument/hover",
                "textDocument/definition",
                "textDocument/declaration",
                "textDocument/typeDefinition",
                "textDocument/implementation",
                "textDocument/references",
                "textDocument/documentHighlight",
                "textDocument/documentSymbol",
                "textDocument/signatureHelp",
                "textDocument/codeAction",
                "textDocument/inlayHint",
            ]
        );
        let proposing: Vec<&str> = Method::KNOWN
            .iter()
            .filter(|m| m.answer_edits().is_some())
            .map(Method::name)
            .collect();
        assert_eq!(
            proposing,
            [
                "textDocument/willSaveWaitUntil",
                "textDocument/codeAction",
                "codeAction/resolve",
                "textDocument/completion",
                "completionItem/resolve",
                "textDocument/formatting",
                "textDocument/rangeFormatting",
                "textDocument/onTypeFormatting",
                "textDocument/rename",
            ]
        );
    }
}
