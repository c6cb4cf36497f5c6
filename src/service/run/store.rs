//! A replayed trajectory's new steps read back a page at a time ([`NewSteps`],
//! [`StepPages`]) through the store's [`RunRead`]; the run service writes runs through
//! the store's [`crate::store::RunStore`] (both implemented by [`crate::store::Database`]
//! itself; [`super::common::CommonSteps`] is a read-only view of some runs' common steps).

use super::RunError;
use crate::store::{RunRead, StoredStep};

/// The steps a replayed (or resumed) trajectory added to the store: trajectory `key`
/// of run `run` from step `first` on (none with `None`). Small, so it can be kept to
/// read them again ([`StepPages`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSteps {
    /// The run.
    pub run: i64,
    /// The trajectory's key in the run.
    pub key: String,
    /// The first new step (`None`: it added none).
    pub first: Option<usize>,
}

impl NewSteps {
    /// Its steps, read from `store` a page at a time.
    pub fn pages<'a>(&'a self, store: &'a dyn RunRead) -> StepPages<'a> {
        StepPages {
            store,
            new: self,
            after: self.first.and_then(|f| f.checked_sub(1)),
            page: Vec::new().into_iter(),
            done: self.first.is_none(),
        }
    }
}

/// A trajectory's steps from a given one on, read from the store a page at a time:
/// how a finished trajectory's steps are printed, whatever its length.
pub struct StepPages<'a> {
    store: &'a dyn RunRead,
    new: &'a NewSteps,
    /// The last step read (`None`: none yet); `done` once the store has no more.
    after: Option<usize>,
    page: std::vec::IntoIter<StoredStep>,
    done: bool,
}

impl StepPages<'_> {
    /// Steps per read: a page of a long trajectory's steps, not the trajectory.
    const PAGE: usize = 256;
}

impl Iterator for StepPages<'_> {
    type Item = Result<StoredStep, RunError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(step) = self.page.next() {
            self.after = Some(step.step);
            return Some(Ok(step));
        }
        if self.done {
            return None;
        }
        match (self.store).stored_steps(self.new.run, &self.new.key, self.after, Self::PAGE) {
            Ok(page) => {
                self.done = page.len() < Self::PAGE;
                self.page = page.into_iter();
                let step = self.page.next()?;
                self.after = Some(step.step);
                Some(Ok(step))
            }
            Err(error) => {
                self.done = true;
                Some(Err(error.into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::core::metrics::flow::{FlowClass, FlowStep, Prf, RankedPrediction, StepCounts};
    use crate::engine::judge::{JudgePrompt, Judgement, Verdict};
    use crate::engine::replay::yardsticks::StepYardsticks;
    use crate::engine::suggest::{Call, CallFailure, FailureKind, ReadSource, StepRead};
    use crate::service::run::report::flow_summary;
    use crate::store::RunResults;
    use crate::store::RunStore;
    use crate::store::{
        Database, StepDetail, StepFailure, StepFlow, StoredContent, StoredPrediction, StoredStep,
    };

    fn read(call: Call, source: ReadSource, file: &str, end: Option<usize>) -> StepRead {
        StepRead {
            call,
            source,
            file: file.into(),
            start_line: 2,
            end_line: end,
            via: None,
        }
    }

    /// A new database with one run of `suggester` of one trajectory, `k`.
    fn one_run(suggester: &str) -> (tempfile::TempDir, Database, i64) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Database::open(&dir.path().join("runs.db")).unwrap();
        let run = db
            .create_run(suggester, &serde_json::json!({}), &[("k".into(), None)])
            .unwrap();
        (dir, db, run)
    }

    #[test]
    fn a_typed_step_round_trips_through_the_store() {
        let (_dir, mut db, run) = one_run("builtin:oracle");
        let store: &mut dyn RunStore = &mut db;
        store
            .set_run_trajectory(
                run,
                "k",
                crate::store::TrajectoryStatus::Running,
                Some("e0"),
                None,
            )
            .unwrap();
        let flow = FlowStep {
            predictions: vec![
                RankedPrediction {
                    rank: 0,
                    matched_gold: Some(2),
                    class: FlowClass::Keeping,
                },
                RankedPrediction {
                    rank: 1,
                    matched_gold: None,
                    class: FlowClass::Breaking,
                },
            ],
            allowed_gold: 1,
        };
        let step = StoredStep {
            step: 1,
            applied: "e2".into(),
            allowed: vec!["e2".into()],
            remaining: 3,
            prf: Prf {
                precision: 0.5,
                recall: 1.0,
                f1: 2.0 / 3.0,
            },
            counts: StepCounts {
                tp: 1,
                fp: 1,
                fn_: 0,
            },
            content: Some(StoredContent {
                edit: "e2".into(),
                bleu: 75.5,
                es: 0.75,
                generated: false,
                answer: Some(2),
            }),
            yardsticks: StepYardsticks {
                delta_chrf: Some(62.5),
                nep_partial: Some(false),
                nep_position: Some(true),
                location_hit: Some(true),
            },
            suggest_ms: 12.5,
            generate_ms: Some(3.0),
            flow: flow.clone(),
            predictions: vec![StoredPrediction {
                rank: 0,
                file: "a.py".into(),
                start_line: 1,
                end_line: 2,
                text: "x\n".into(),
                confidence: Some(0.5),
                matched: Some("e2".into()),
                class: FlowClass::Keeping,
            }],
            failures: vec![StepFailure {
                call: Call::Generate,
                failure: CallFailure {
                    kind: FailureKind::Timeout,
                    message: "suggester did not answer `generate` within 1s".into(),
                },
            }],
            reads: vec![
                read(Call::Suggest, ReadSource::Reported, "a.py", Some(4)),
                read(Call::Generate, ReadSource::Reported, "b.py", None),
            ],
            suggest_cached: Some(true),
            generate_cached: Some(false),
            judgement: None,
        };
        store.record_step(run, "k", &step).unwrap();
        let lsp = StepRead {
            via: Some("textDocument/definition".into()),
            ..read(Call::Suggest, ReadSource::Lsp, "c.py", Some(3))
        };
        store
            .add_run_reads(run, "k", 1, std::slice::from_ref(&lsp))
            .unwrap();
        assert_eq!(
            store.run_steps(run, "k").unwrap(),
            vec![StepFlow {
                step: 1,
                applied: "e2".into(),
                flow,
            }]
        );
        assert_eq!(store.run_initial(run, "k").unwrap().as_deref(), Some("e0"));
        let reads: Vec<(usize, StepRead)> = step
            .reads
            .iter()
            .chain([&lsp])
            .map(|r| (1, r.clone()))
            .collect();
        assert_eq!(store.run_reads(run, "k").unwrap(), reads);
        let m = store.run_measurements(run, None).unwrap();
        assert_eq!(
            (m.bleu, m.es, m.suggest_ms, m.generate_ms, m.errors),
            (
                vec![75.5],
                vec![0.75],
                vec![12.5],
                vec![3.0],
                vec![("timeout".to_string(), 1)]
            )
        );
        store.set_initialize_cached(run, "k", true).unwrap();
        let m = store.run_measurements(run, None).unwrap();
        assert_eq!((m.cache_served, m.cache_live), (2, 1));
        assert_eq!(
            store.run_content_edits(run).unwrap(),
            vec![("k".to_string(), 1, "e2".to_string())]
        );
        assert_eq!(
            store.run_step_details(run, "k").unwrap(),
            vec![StepDetail {
                step: 1,
                applied: "e2".into(),
                prf: step.prf,
                content: step.content.clone(),
                predictions: step.predictions.clone(),
                failures: vec![
                    "generate timeout: suggester did not answer `generate` within 1s".into()
                ],
            }]
        );
    }

    #[test]
    fn steps_come_back_as_recorded_a_page_at_a_time() {
        let (_dir, mut db, run) = one_run("builtin:noop");
        let store: &mut dyn RunStore = &mut db;
        // More steps than a page, each with a prediction, a failure and a read of its own.
        let steps: Vec<StoredStep> = (1..=600)
            .map(|n| StoredStep {
                step: n,
                applied: format!("e{n}"),
                allowed: vec![format!("e{n}"), format!("e{}", n + 1)],
                remaining: 601 - n,
                prf: Prf {
                    precision: 0.0,
                    recall: 0.0,
                    f1: 0.0,
                },
                counts: StepCounts {
                    tp: 0,
                    fp: 1,
                    fn_: 2,
                },
                content: None,
                suggest_ms: n as f64 / 4.0,
                generate_ms: None,
                flow: FlowStep {
                    predictions: vec![RankedPrediction {
                        rank: 0,
                        matched_gold: None,
                        class: FlowClass::Breaking,
                    }],
                    // More than the step names (it names the first ones only).
                    allowed_gold: 150,
                },
                predictions: vec![StoredPrediction {
                    rank: 0,
                    file: "a.py".into(),
                    start_line: n,
                    end_line: n + 1,
                    text: format!("line {n}\n"),
                    confidence: None,
                    matched: None,
                    class: FlowClass::Breaking,
                }],
                failures: vec![StepFailure {
                    call: Call::Generate,
                    failure: CallFailure {
                        kind: FailureKind::Crash,
                        message: format!("exit {n}"),
                    },
                }],
                reads: vec![read(Call::Suggest, ReadSource::Reported, "a.py", Some(n))],
                suggest_cached: None,
                generate_cached: None,
                // Every third step has a row of yardsticks; the others have none.
                yardsticks: StepYardsticks {
                    location_hit: (n % 3 == 0).then_some(n % 2 == 0),
                    ..StepYardsticks::default()
                },
                // Judged: a verdict of each question, a failure, and no question asked.
                judgement: match n % 4 {
                    0 => Some(Judgement {
                        prompt: JudgePrompt::Nep,
                        result: Ok(Verdict::Nep { yes: n % 8 == 0 }),
                        cached: false,
                    }),
                    1 => Some(Judgement {
                        prompt: JudgePrompt::ZedQa,
                        result: Ok(Verdict::ZedQa {
                            reverts_edits: true,
                            confidence: (n % 5 + 1) as u8,
                        }),
                        cached: true,
                    }),
                    2 => Some(Judgement {
                        prompt: JudgePrompt::Nep,
                        result: Err(CallFailure {
                            kind: FailureKind::BadResult,
                            message: format!("no yes or no {n}"),
                        }),
                        cached: n % 3 == 0,
                    }),
                    _ => None,
                },
            })
            .collect();
        for step in &steps {
            store.record_step(run, "k", step).unwrap();
        }
        let read_back = |first| {
            let new = super::NewSteps {
                run,
                key: "k".into(),
                first,
            };
            new.pages(&*store).collect::<Result<Vec<_>, _>>().unwrap()
        };
        assert_eq!(read_back(Some(3)), steps[2..]);
        assert_eq!(read_back(Some(1)), steps);
        assert_eq!(read_back(None), []);
        // `replay --json`'s document, written a page at a time, is serde_json's document
        // of the same values, byte for byte.
        let document = crate::service::run::json::ReplayDocument::default();
        let header = serde_json::json!({"type": "run", "run": run, "db": "runs.db"});
        document.set_header(header.clone());
        for first in [Some(3), None] {
            document.push(super::NewSteps {
                run,
                key: "k".into(),
                first,
            });
        }
        let summary = serde_json::json!({"type": "summary", "run": run, "failed": 0});
        let mut written = Vec::new();
        document.write(&mut written, &*store, &summary).unwrap();
        let trajectory = |steps: &[StoredStep]| {
            let steps: Vec<_> = steps.iter().map(crate::service::run::json::step).collect();
            serde_json::json!({"type": "trajectory", "key": "k", "steps": steps})
        };
        let whole = serde_json::json!({"run": header, "summary": summary,
            "trajectories": [trajectory(&steps[2..]), trajectory(&[])]});
        assert_eq!(String::from_utf8(written).unwrap(), format!("{whole}\n"));
        // `export results` counts them all.
        let results = db.result_steps(run).unwrap();
        assert_eq!(
            (results.len(), results[0].allowed, results[599].allowed),
            (600, 150, 150)
        );
    }

    #[test]
    fn rows_written_by_the_previous_version_read_back_identically() {
        // The rows as the version before typed steps wrote them, with plain SQL: the
        // `flow` column as JSON with positional prediction arrays (one with a class this
        // version does not know, which every version skips), reads with string calls.
        let dir = tempfile::tempdir().unwrap();
        let mut db = Database::open(&dir.path().join("old.db")).unwrap();
        let run = RunStore::create_run(
            &mut db,
            "builtin:propagate",
            &serde_json::json!({}),
            &[("k".into(), None)],
        )
        .unwrap();
        db.connection()
            .execute_batch(&format!(
                r#"INSERT INTO run_steps (run_id, key, step, applied, allowed, remaining, precision, recall, f1,
                                         tp, fp, fn, content_edit, content_bleu, content_es, content_generated,
                                         suggest_ms, generate_ms, flow)
                   VALUES ({run}, 'k', 1, 'e1', '["e1","e2"]', 2, 0.5, 0.5, 0.5, 1, 1, 1, 'e1', 100.0, 1.0, 0, 2.0, NULL,
                           '{{"allowed":2,"predictions":[[0,1,"flow_keeping"],[1,null,"flow_breaking"],[2,0,"flow_sideways"]]}}'),
                          ({run}, 'k', 2, 'e2', '["e2"]', 1, 0.0, 0.0, 0.0, 0, 0, 1, NULL, NULL, NULL, NULL, 1.0, NULL,
                           'not json');
                   INSERT INTO run_reads (run_id, key, step, seq, call, source, file, start_line, end_line, via)
                   VALUES ({run}, 'k', 1, 0, 'generate', 'reported', 'a.py', 3, 5, NULL),
                          ({run}, 'k', 1, 1, 'suggest', 'lsp', 'b.py', 0, NULL, 'textDocument/hover');"#
            ))
            .unwrap();
        let store: &dyn RunStore = &db;
        let keeping = RankedPrediction {
            rank: 0,
            matched_gold: Some(1),
            class: FlowClass::Keeping,
        };
        let breaking = RankedPrediction {
            rank: 1,
            matched_gold: None,
            class: FlowClass::Breaking,
        };
        assert_eq!(
            store.run_steps(run, "k").unwrap(),
            vec![
                StepFlow {
                    step: 1,
                    applied: "e1".into(),
                    flow: FlowStep {
                        predictions: vec![keeping, breaking],
                        allowed_gold: 2,
                    },
                },
                StepFlow {
                    step: 2,
                    applied: "e2".into(),
                    flow: FlowStep::default(),
                },
            ]
        );
        assert_eq!(
            store.run_reads(run, "k").unwrap(),
            vec![
                (
                    1,
                    StepRead {
                        start_line: 3,
                        ..read(Call::Generate, ReadSource::Reported, "a.py", Some(5))
                    }
                ),
                (
                    1,
                    StepRead {
                        start_line: 0,
                        via: Some("textDocument/hover".into()),
                        ..read(Call::Suggest, ReadSource::Lsp, "b.py", None)
                    }
                ),
            ]
        );
        let summary = flow_summary(store, run).unwrap();
        assert_eq!((summary.steps, summary.micro.precision), (2, 0.5));
    }
}
