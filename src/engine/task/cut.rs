//! Cutting tasks from one commit's state: which blocks the commit touched, one task
//! per sampled block and scenario, each with its enclosing definition, dependency
//! level, covering tests, RAG hints and retrieved context. The scenarios: a seeded
//! sample of the ~20 % complete inner blocks, incomplete suffixes, added functions (with
//! RAG hints); context from the state without the ground truth, or from the latest
//! version.
//!
//! Pure apart from the [`Retriever`] (a command retriever runs a process): the
//! state's texts, the changed files and their touched lines come in, tasks come out.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::blocks::{Block, LineIndex, blocks, cursor_at, lines_of};
use super::coverage::{TestIndex, is_test_file};
use super::dependency::dependency_level;
use super::retrieval::{RetrieveError, Retriever, context_query, existed_in, top_chunks};
use super::{
    BlockKind, ContextFrom, Definition, RetrievedContext, Scenario, TASK_FORMAT_VERSION, Task,
    TaskSource, TaskState,
};
use crate::core::syntax::Language;
use crate::core::syntax::structure::{FileStructure, analyze};
use crate::engine::suggest::retrieve::index::ChunkIndex;

/// How many hints the RAG scenario gives (Codev-Bench's top 3).
pub const RAG_HINTS: usize = 3;

/// What to cut and how.
#[derive(Debug, Clone)]
pub struct CutOptions {
    /// Scenarios to cut.
    pub scenarios: BTreeSet<Scenario>,
    /// Most tasks per commit and scenario (a seeded sample); `None` keeps them all.
    pub max_per_commit: Option<usize>,
    /// Seed of the sample and of the inner blocks left complete.
    pub seed: u64,
    /// Cut from every function of the state, not only the code the commit touched.
    pub all_functions: bool,
    /// Retrieved context to attach, if any.
    pub context: Option<ContextOptions>,
}

/// Which context to retrieve for each task.
#[derive(Debug, Clone, Copy)]
pub struct ContextOptions {
    /// The task's state (aware) or the latest version (ignored).
    pub from: ContextFrom,
    /// How many chunks.
    pub k: usize,
}

/// A file the commit changed, as it is in the commit.
#[derive(Debug, Clone)]
pub struct ChangedFile {
    /// Path in the commit.
    pub path: String,
    /// Its text in the parent (`None`: the commit adds it).
    pub parent: Option<String>,
    /// The 0-based lines (end exclusive) the commit added or changed.
    pub touched: Vec<Range<usize>>,
}

/// One commit to cut from.
#[derive(Debug)]
pub struct CommitInput<'a> {
    /// Repository name.
    pub repository: &'a str,
    /// Full commit id.
    pub commit: &'a str,
    /// The commit's tree: path → text.
    pub files: &'a BTreeMap<String, String>,
    /// The files it changed.
    pub changed: &'a [ChangedFile],
}

/// A small deterministic generator (SplitMix64): the sample must be the same for a
/// seed on every machine and build, which a library's default generator does not
/// promise.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator for `seed` and a label (commit, scenario), so each stream differs.
    pub fn new(seed: u64, label: &str) -> SplitMix {
        // FNV-1a of the label, mixed into the seed.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in label.bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        SplitMix(seed ^ hash)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `items` in a seeded order (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// One parsed file of the state.
struct Parsed {
    language: Language,
    lines: LineIndex,
    blocks: Vec<Block>,
    structure: FileStructure,
}

/// A hole chosen in a file, before it becomes a task.
struct Hole {
    scenario: Scenario,
    file: String,
    range: Range<usize>,
    block: Option<BlockKind>,
    /// What the task shows after the hole when it hides the real rest (incomplete suffix).
    shown_suffix: Option<String>,
}

/// The language of `path` when tasks are cut from it (Python, Go, Java, JavaScript,
/// TypeScript; test files excluded).
pub fn cuttable(path: &str) -> Option<Language> {
    let language = Language::from_path(std::path::Path::new(path))?;
    (language != Language::Rust && !is_test_file(path)).then_some(language)
}

/// Whether a block's `lines` meet any of `touched`.
fn meets(lines: &Range<usize>, touched: &[Range<usize>]) -> bool {
    touched
        .iter()
        .any(|t| t.start < lines.end && lines.start < t.end.max(t.start + 1))
}

/// Every task of `input`'s commit for `options`.
pub fn cut_commit(
    input: &CommitInput<'_>,
    options: &CutOptions,
    retriever: &mut dyn Retriever,
    head: Option<&mut ChunkIndex>,
) -> Result<Vec<Task>, RetrieveError> {
    let touched = touched_lines(input, options);
    let parsed = touched
        .keys()
        .map(|&path| {
            let language = cuttable(path).expect("filtered above");
            let text = &input.files[path];
            let file = Parsed {
                language,
                lines: LineIndex::new(text),
                blocks: blocks(language, text),
                structure: analyze(language, text),
            };
            (path, file)
        })
        .collect();
    let cutting = Cutting {
        input,
        options,
        parsed,
        touched,
    };
    let mut holes = Vec::new();
    for &scenario in &options.scenarios {
        holes.extend(cutting.choose_holes(scenario));
    }
    let parsed = cutting.parsed;
    if holes.is_empty() {
        // Nothing to describe: skip parsing the state's tests and chunks.
        return Ok(Vec::new());
    }
    let tests = TestIndex::build(input.files);
    let mut contexts = Contexts {
        state: (options.scenarios.contains(&Scenario::Rag)
            || options
                .context
                .is_some_and(|c| c.from == ContextFrom::State))
        .then(|| ChunkIndex::build(input.files.iter().map(|(p, t)| (p.clone(), t.clone())))),
        head,
        hole_removed: None,
    };
    let mut seen = BTreeSet::new();
    let mut tasks = Vec::new();
    for hole in holes {
        let file = &parsed[hole.file.as_str()];
        let text = &input.files[&hole.file];
        let mut task = describe(input, &hole, file.language);
        if !seen.insert(task.id.clone()) {
            continue;
        }
        annotate(
            &mut task,
            file.language,
            &file.structure,
            text,
            &hole.range,
            input.files,
            &tests,
        );
        contexts.fill(&mut task, &hole, input, options, retriever)?;
        tasks.push(task);
    }
    Ok(tasks)
}

/// The lines each cuttable file of the state offers holes in: the lines the commit
/// touched, or (all functions) the whole file.
fn touched_lines<'a>(
    input: &CommitInput<'a>,
    options: &CutOptions,
) -> BTreeMap<&'a str, Vec<Range<usize>>> {
    let mut touched: BTreeMap<&str, Vec<Range<usize>>> = BTreeMap::new();
    if options.all_functions {
        for (path, text) in input.files {
            if cuttable(path).is_some() {
                touched.insert(
                    path,
                    std::iter::once(0..text.lines().count().max(1)).collect(),
                );
            }
        }
    } else {
        for change in input.changed {
            if cuttable(&change.path).is_some() && input.files.contains_key(&change.path) {
                touched.insert(&change.path, change.touched.clone());
            }
        }
    }
    touched
}

/// A commit as its holes are chosen: the input and options, its cuttable files parsed,
/// and the lines each offers holes in.
struct Cutting<'i, 'a> {
    input: &'i CommitInput<'a>,
    options: &'i CutOptions,
    parsed: BTreeMap<&'a str, Parsed>,
    touched: BTreeMap<&'a str, Vec<Range<usize>>>,
}

impl Cutting<'_, '_> {
    /// The holes of one scenario: its candidates in a seeded order, at most
    /// `max_per_commit` of them, shaped as the scenario wants, in file order.
    fn choose_holes(&self, scenario: Scenario) -> Vec<Hole> {
        let (input, options) = (self.input, self.options);
        let candidates = self.candidates(scenario);
        let mut rng = SplitMix::new(options.seed, &format!("{}:{scenario:?}", input.commit));
        let mut chosen = candidates;
        rng.shuffle(&mut chosen);
        if let Some(max) = options.max_per_commit {
            chosen.truncate(max);
        }
        if scenario == Scenario::InnerBlock {
            // About one in five left already complete: the cursor at the block's end,
            // nothing to write (Codev-Bench's 20 %).
            let complete = (chosen.len() + 2) / 5;
            for hole in chosen.iter_mut().take(complete) {
                hole.range = hole.range.end..hole.range.end;
            }
        }
        if scenario == Scenario::IncompleteSuffix {
            for hole in &mut chosen {
                let text = &input.files[&hole.file];
                let function_end = self.parsed[hole.file.as_str()]
                    .blocks
                    .iter()
                    .filter(|b| {
                        b.kind == BlockKind::Function
                            && b.range.start <= hole.range.start
                            && hole.range.end <= b.range.end
                    })
                    .map(|b| b.range.end)
                    .min();
                // Half of them lose the rest of the file, half the rest of the function.
                hole.shown_suffix = Some(match function_end {
                    Some(end) if rng.next_u64() % 2 == 0 => text[end..].to_string(),
                    _ => String::new(),
                });
            }
        }
        chosen.sort_by(|a, b| (&a.file, a.range.start).cmp(&(&b.file, b.range.start)));
        chosen
    }

    /// Every hole `scenario` could cut from the commit's touched code.
    fn candidates(&self, scenario: Scenario) -> Vec<Hole> {
        let (input, options) = (self.input, self.options);
        let mut out = Vec::new();
        for (&path, file) in &self.parsed {
            let touched = &self.touched[path];
            let hole = |range: Range<usize>, block: Option<BlockKind>| Hole {
                scenario,
                file: path.to_string(),
                range,
                block,
                shown_suffix: None,
            };
            match scenario {
                Scenario::FullBlock | Scenario::Rag => {
                    for b in &file.blocks {
                        if meets(&file.lines.lines(&b.range), touched) {
                            out.push(hole(b.range.clone(), Some(b.kind)));
                        }
                    }
                }
                Scenario::IncompleteSuffix => {
                    // Inside a function: the cursor is in a body whose rest is gone.
                    for b in &file.blocks {
                        let in_function = file.blocks.iter().any(|f| {
                            f.kind == BlockKind::Function
                                && f.range.start < b.range.start
                                && b.range.end <= f.range.end
                        });
                        if b.kind != BlockKind::Function
                            && in_function
                            && meets(&file.lines.lines(&b.range), touched)
                        {
                            out.push(hole(b.range.clone(), Some(b.kind)));
                        }
                    }
                }
                Scenario::InnerBlock => {
                    for b in &file.blocks {
                        if let Some(inner) = &b.inner
                            && meets(&file.lines.lines(inner), touched)
                        {
                            out.push(hole(inner.clone(), Some(b.kind)));
                        }
                    }
                }
                Scenario::AddedFunction => {
                    let added = added_functions(file, input.changed, path, options.all_functions);
                    for b in &file.blocks {
                        if b.kind == BlockKind::Function
                            && let Some(body) = &b.body_after_doc
                            && added.contains(&file.lines.cursor(b.range.start).line)
                        {
                            out.push(hole(body.clone(), Some(BlockKind::Function)));
                        }
                    }
                }
                Scenario::SessionPause => {}
            }
        }
        out
    }
}

/// The task of one hole, before its annotations, hints and context: its id, the
/// text around the hole and what fills it.
fn describe(input: &CommitInput<'_>, hole: &Hole, language: Language) -> Task {
    let text = &input.files[&hole.file];
    let cursor = cursor_at(text, hole.range.start);
    let id = format!(
        "{}@{}:{}:{}:{}",
        input.repository,
        &input.commit[..input.commit.len().min(12)],
        hole.file,
        cursor.line + 1,
        scenario_name(hole.scenario)
    );
    let real_suffix = text[hole.range.end..].to_string();
    Task {
        version: TASK_FORMAT_VERSION,
        id,
        repository: input.repository.to_string(),
        source: TaskSource::Commit {
            commit: input.commit.to_string(),
        },
        language: language.name().to_string(),
        scenario: hole.scenario,
        state: TaskState {
            commit: Some(input.commit.to_string()),
            files: Vec::new(),
            block: hole.block,
        },
        file: hole.file.clone(),
        cursor,
        prefix: text[..hole.range.start].to_string(),
        suffix: hole
            .shown_suffix
            .clone()
            .unwrap_or_else(|| real_suffix.clone()),
        state_suffix: hole.shown_suffix.is_some().then_some(real_suffix),
        ground_truth: text[hole.range.clone()].to_string(),
        enclosing: None,
        dependency: None,
        tests: Vec::new(),
        hints: Vec::new(),
        context: None,
    }
}

/// The indexes a commit's tasks search for hints and context: the state's (built
/// once, a task's file put back whole before the next task searches it) and HEAD's.
struct Contexts<'h> {
    state: Option<ChunkIndex>,
    head: Option<&'h mut ChunkIndex>,
    /// The file whose text in `state` is an earlier task's, hole removed.
    hole_removed: Option<String>,
}

impl Contexts<'_> {
    /// The task's retrieval hints (RAG) and its context, when `options` ask for them.
    fn fill(
        &mut self,
        task: &mut Task,
        hole: &Hole,
        input: &CommitInput<'_>,
        options: &CutOptions,
        retriever: &mut dyn Retriever,
    ) -> Result<(), RetrieveError> {
        let text = &input.files[&hole.file];
        if hole.scenario == Scenario::Rag
            && let Some(index) = self.state.as_mut()
        {
            // The hints see the whole state: put back a file an earlier task's context
            // search left without its hole.
            if let Some(path) = self.hole_removed.take() {
                index.update(&path, Some(input.files[&path].clone()));
            }
            task.hints = rag_hints(retriever, index, task, text, &hole.range)?;
        }
        let Some(context) = options.context else {
            return Ok(());
        };
        let index = match context.from {
            ContextFrom::State => {
                // Another file left without its hole goes back whole first.
                if let (Some(index), Some(path)) = (self.state.as_mut(), &self.hole_removed)
                    && path != &hole.file
                {
                    index.update(path, Some(input.files[path].clone()));
                }
                self.state.as_mut()
            }
            ContextFrom::Head => self.head.as_deref_mut(),
        };
        if let Some(index) = index {
            task.context = Some(retrieve_context(
                retriever,
                index,
                task,
                context,
                input.files,
            )?);
            if context.from == ContextFrom::State {
                self.hole_removed = Some(hole.file.clone());
            }
        }
        Ok(())
    }
}

/// Fills what the syntax of the state tells about a task whose hole is `hole` of
/// `text` (the file in the state, hole filled): its enclosing definition, its
/// dependency level (when the ground truth is not empty) and the tests that call its
/// function.
pub fn annotate(
    task: &mut Task,
    language: Language,
    structure: &FileStructure,
    text: &str,
    hole: &Range<usize>,
    files: &BTreeMap<String, String>,
    tests: &TestIndex,
) {
    let (definition, callable) = enclosing(structure, &lines_of(text, hole));
    task.enclosing = definition;
    task.dependency = (!hole.is_empty())
        .then(|| dependency_level(language, &task.file, text, structure, hole, files))
        .flatten();
    task.tests = callable
        .as_deref()
        .map(|name| tests.covering(name))
        .unwrap_or_default();
}

/// The snake-case name of a scenario (as in JSON).
pub fn scenario_name(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::FullBlock => "full_block",
        Scenario::IncompleteSuffix => "incomplete_suffix",
        Scenario::InnerBlock => "inner_block",
        Scenario::Rag => "rag",
        Scenario::AddedFunction => "added_function",
        Scenario::SessionPause => "session_pause",
    }
}

/// The first lines of the functions of `path` the commit added (qualified names absent
/// from the parent; every function with `all`).
fn added_functions(
    file: &Parsed,
    changed: &[ChangedFile],
    path: &str,
    all: bool,
) -> BTreeSet<usize> {
    let parent = changed
        .iter()
        .find(|c| c.path == path)
        .and_then(|c| c.parent.as_deref());
    let before: BTreeSet<String> = match (all, parent) {
        (true, _) | (false, None) => BTreeSet::new(),
        (false, Some(parent)) => {
            let structure = analyze(file.language, parent);
            callables(&structure)
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        }
    };
    if !all && !changed.iter().any(|c| c.path == path) {
        return BTreeSet::new();
    }
    callables(&file.structure)
        .into_iter()
        .filter(|(name, _)| !before.contains(name))
        .map(|(_, line)| line)
        .collect()
}

/// Qualified names (`Class.method`) and first lines of the functions and methods.
fn callables(structure: &FileStructure) -> Vec<(String, usize)> {
    structure
        .scopes
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind.is_callable())
        .map(|(i, s)| (qualified(structure, i), s.start_line))
        .collect()
}

/// `Outer.inner` names of a scope.
fn qualified(structure: &FileStructure, scope: usize) -> String {
    structure
        .chain(Some(scope))
        .into_iter()
        .map(|i| structure.scopes[i].name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

/// The innermost definition holding all of `lines`, and the bare name of the innermost
/// function or method among them (what covering tests call).
fn enclosing(
    structure: &FileStructure,
    lines: &Range<usize>,
) -> (Option<Definition>, Option<String>) {
    let holds = |i: usize| {
        let s = &structure.scopes[i];
        s.start_line <= lines.start && lines.end <= s.end_line + 1
    };
    let chain: Vec<usize> = structure
        .path_at(lines.start)
        .into_iter()
        .filter(|&i| holds(i))
        .collect();
    let definition = chain.last().map(|&i| {
        let s = &structure.scopes[i];
        Definition {
            name: qualified(structure, i),
            kind: s.kind.as_str().to_string(),
            start_line: s.start_line,
            end_line: s.end_line + 1,
        }
    });
    let callable = chain
        .iter()
        .rev()
        .find(|&&i| structure.scopes[i].kind.is_callable())
        .map(|&i| structure.scopes[i].name.clone());
    (definition, callable)
}

/// Codev-Bench's RAG hints: the function around the hole (the block itself when it is
/// one) as the query, the most similar other functions of the state.
fn rag_hints(
    retriever: &mut dyn Retriever,
    index: &ChunkIndex,
    task: &Task,
    text: &str,
    hole: &Range<usize>,
) -> Result<Vec<super::ContextChunk>, RetrieveError> {
    let own = task
        .enclosing
        .as_ref()
        .map_or_else(|| lines_of(text, hole), |d| d.start_line..d.end_line);
    let query = text
        .lines()
        .skip(own.start)
        .take(own.end - own.start)
        .collect::<Vec<_>>()
        .join("\n");
    let file = task.file.as_str();
    let keep = |path: &str, chunk: &crate::engine::suggest::retrieve::chunks::Chunk| {
        !(path == file && chunk.start_line < own.end && own.start < chunk.end_line)
    };
    let mut hints = top_chunks(retriever, index, &query, &keep, RAG_HINTS)?;
    for hint in &mut hints {
        hint.score = None;
    }
    Ok(hints)
}

/// The context for `task` from `index` (the state's, or the latest version's);
/// `state` tells which chunks existed then. From the state, the task's file is left
/// in `index` without the hole.
pub fn retrieve_context(
    retriever: &mut dyn Retriever,
    index: &mut ChunkIndex,
    task: &Task,
    options: ContextOptions,
    state: &BTreeMap<String, String>,
) -> Result<RetrievedContext, RetrieveError> {
    let query = context_query(&task.prefix, &task.suffix);
    let file = task.file.clone();
    let own_name = task
        .enclosing
        .as_ref()
        .map(|d| d.name.rsplit('.').next().unwrap_or_default().to_string());
    let chunks = match options.from {
        ContextFrom::State => {
            // The state without the hole's ground truth: it cannot be retrieved.
            let without = format!(
                "{}{}",
                task.prefix,
                task.state_suffix.as_deref().unwrap_or(&task.suffix)
            );
            index.update(&file, Some(without));
            // The task's own function (what is left of it) is the query, not context.
            let line = task.cursor.line;
            let own = task
                .enclosing
                .as_ref()
                .map_or(line..line + 1, |d| d.start_line.min(line)..line + 1);
            let keep = |path: &str, chunk: &crate::engine::suggest::retrieve::chunks::Chunk| {
                !(path == file && chunk.start_line < own.end && own.start < chunk.end_line)
            };
            // Left as it is: the next task replaces it again (its caller puts the
            // whole file back before anything else reads the index).
            top_chunks(retriever, index, &query, &keep, options.k)?
        }
        ContextFrom::Head => {
            // The task's own function as it is later is the answer, not context.
            let keep = |path: &str, chunk: &crate::engine::suggest::retrieve::chunks::Chunk| {
                !(path == file && chunk.name.is_some() && chunk.name == own_name)
            };
            top_chunks(retriever, index, &query, &keep, options.k)?
        }
    };
    let chunks: Vec<_> = chunks
        .into_iter()
        .map(|mut c| {
            // Its own path first: where a chunk that existed almost always was.
            let own = state.get(&c.file).map(String::as_str);
            c.existed_at_state = existed_in(
                &c.text,
                own.into_iter().chain(state.values().map(String::as_str)),
            );
            c
        })
        .collect();
    Ok(RetrievedContext {
        from: options.from,
        retriever: retriever.name(),
        leaked: chunks.iter().any(|c| !c.existed_at_state),
        chunks,
    })
}
