//! What the judge is asked and how its answer is read: the two questions (`nep`: is the
//! prediction a reasonable next edit given the real one, yes or no; `zed-qa`: does it
//! revert the programmer's edits, and how likely is it to be accepted, 1–5, as JSON),
//! rendered from a [`JudgeCase`], the JSON schema a structured answer must follow
//! (`--judge-format`), and the strict parse of an answer. Pure: text in, text out. The prompts are this project's own wording of the questions the Next Edit
//! Prediction benchmark and Zed's edit prediction CLI ask (docs/metrics.md names the
//! commits they were read at).

use serde_json::{Value, json};
use similar::TextDiff;

use super::{JudgeCase, JudgeFormat, JudgePrompt, Verdict};
use crate::engine::suggest::prompt::Prompt;

/// Why an answer gives no verdict (each message quotes the answer's start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// `nep`: the first word is neither yes nor no.
    #[error("the judge's answer does not start with yes or no: {0}")]
    NotYesOrNo(String),
    /// A structured `nep` answer: no `answer` field that is `"yes"` or `"no"`.
    #[error("the judge's answer has no answer \"yes\" or \"no\": {0}")]
    NoYesOrNoField(String),
    /// `zed-qa`, or any structured answer: no JSON object where one is looked for.
    #[error("the judge's answer holds no JSON object: {0}")]
    NoObject(String),
    /// `zed-qa`: `reverts_edits` missing or not a boolean.
    #[error("the judge's answer has no boolean reverts_edits: {0}")]
    NoRevertsEdits(String),
    /// `zed-qa`: `confidence` missing or not a whole number from 1 to 5.
    #[error("the judge's answer has no confidence from 1 to 5: {0}")]
    NoConfidence(String),
}

/// How much of an unparsable answer its failure message repeats.
const QUOTED_CHARS: usize = 80;

/// The request for `case` under `prompt`: a system message (the task and the answer's
/// format) and a user message (the case).
pub fn render(prompt: JudgePrompt, case: &JudgeCase) -> Prompt {
    match prompt {
        JudgePrompt::Nep => render_nep(case),
        JudgePrompt::ZedQa => render_zed_qa(case),
    }
}

/// The JSON schema of `prompt`'s structured answer: an object with exactly the
/// verdict's fields (`strict` structured outputs want every property required and no
/// others). `nep`: `answer`, `"yes"` or `"no"` (an object, not a bare string: OpenAI
/// takes only an object at the root). `zed-qa`: `reverts_edits`, a boolean, and
/// `confidence`, a whole number from 1 to 5, given both as `minimum`/`maximum` and as
/// an `enum` (llama-cpp-python's grammar ignores the bounds but keeps to an enum).
pub fn schema(prompt: JudgePrompt) -> Value {
    let properties = match prompt {
        JudgePrompt::Nep => json!({
            "answer": {"type": "string", "enum": ["yes", "no"]},
        }),
        JudgePrompt::ZedQa => json!({
            "reverts_edits": {"type": "boolean"},
            "confidence": {
                "type": "integer",
                "minimum": 1,
                "maximum": 5,
                "enum": [1, 2, 3, 4, 5],
            },
        }),
    };
    let required: Vec<&String> = properties.as_object().expect("an object").keys().collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The `response_format` of a request asking `prompt` in `format` (`None` for free
/// text: the request is exactly what it was before there were formats).
pub fn response_format(prompt: JudgePrompt, format: JudgeFormat) -> Option<Value> {
    // The name OpenAI's `json_schema` wants the schema to go by.
    let name = match prompt {
        JudgePrompt::Nep => "nep_verdict",
        JudgePrompt::ZedQa => "zed_qa_verdict",
    };
    match format {
        JudgeFormat::Text => None,
        JudgeFormat::JsonSchema => Some(json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema(prompt), "strict": true},
        })),
        JudgeFormat::LlamaJson => Some(json!({
            "type": "json_object",
            "schema": schema(prompt),
        })),
    }
}

/// NEP's question: given what the programmer did and the real next edit, is the
/// predicted one reasonable? One word back.
fn render_nep(case: &JudgeCase) -> Prompt {
    let system = "You judge a model that predicts a programmer's next code edit. You are \
        shown the edits the programmer made so far, the code as it is now, the code after \
        the edit the programmer really made next (the ground truth) and the code after the \
        edit the model predicted. Decide whether the model's prediction is a reasonable \
        next edit, judged against the ground truth. Answer with one word, yes or no, and \
        nothing else."
        .to_string();
    let user = format!(
        "### Edits so far (unified diff, oldest first)\n{history}\n\
         ### Code now ({file}, lines {start}-{end})\n{before}\n\
         ### Ground truth: the same lines after the real next edit\n{gold}\n\
         ### Model output: the same lines after the predicted edit\n{predicted}\n",
        history = fenced(&case.history),
        file = case.file,
        start = case.start_line + 1,
        end = case.start_line + case.before.lines().count(),
        before = fenced(&case.before),
        gold = fenced(&case.gold),
        predicted = fenced(&case.predicted),
    );
    Prompt::Chat { system, user }
}

/// Zed's QA question: does the prediction undo what the programmer did, and how likely
/// is it to be accepted? Asked, as Zed asks it, without the real next edit.
fn render_zed_qa(case: &JudgeCase) -> Prompt {
    let system = "You evaluate an edit prediction model of a code editor: it reads a \
        programmer's recent edits and predicts the edit they will make next. A good \
        prediction finishes a change the programmer started, keeps to the patterns and \
        style already in the code, and never undoes text the programmer just wrote (unless \
        they undid it themselves)."
        .to_string();
    let diff = TextDiff::from_lines(&case.before, &case.predicted)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{}", case.file), &format!("b/{}", case.file))
        .to_string();
    let user = format!(
        "## Edit history (unified diff, oldest first)\n{history}\n\
         ## Current file ({file}, lines {start}-{end}, where the prediction applies)\n{before}\n\
         ## Predicted next edit (unified diff of those lines)\n{diff}\n\
         ## Questions\n\
         1. reverts_edits: does the prediction undo or revert changes the programmer made \
         in the edit history? true or false.\n\
         2. confidence: how likely is the programmer to accept the prediction? 1 = surely \
         reject (wrong, nonsensical or harmful), 2 = probably reject (does not fit what \
         they are doing), 3 = unsure (plausible, not clearly right), 4 = probably accept \
         (a reasonable next step), 5 = surely accept (the obvious continuation).\n\n\
         Answer with one JSON object and nothing else:\n\
         {{\"reasoning\": \"…\", \"reverts_edits\": true or false, \"confidence\": 1 to 5}}\n",
        history = fenced(&case.history),
        file = case.file,
        start = case.start_line + 1,
        end = case.start_line + case.before.lines().count(),
        before = fenced(&case.before),
        diff = fenced(&diff),
    );
    Prompt::Chat { system, user }
}

/// `text` in a code fence long enough that no line of it closes the fence.
fn fenced(text: &str) -> String {
    let mut fence = "```".to_string();
    while text.contains(fence.as_str()) {
        fence.push('`');
    }
    let newline = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{fence}\n{text}{newline}{fence}")
}

/// The verdict in `answer` to a question asked in `format`, read strictly; an error
/// for anything else (a refusal, garbage, a missing or out-of-range field), never a
/// default.
///
/// A structured answer (`json-schema`, `llama-json`) must be, white space aside, one
/// JSON object with [`schema`]'s fields (others are ignored): `nep`'s `answer` exactly
/// `"yes"` or `"no"`. A `text` answer, `nep`: the answer's first word (letters, after leading white space and `*`, `"`,
/// `'`, `` ` `` marks), case-insensitive, must be `yes` or `no`. `zed-qa`: the text
/// inside the answer's first code fence if it has one, else from its first `{` to its
/// last `}`, must be a JSON object with `reverts_edits` a boolean and `confidence` a
/// whole number from 1 to 5 (other fields are ignored).
pub fn parse(
    prompt: JudgePrompt,
    format: JudgeFormat,
    answer: &str,
) -> Result<Verdict, AnswerError> {
    match (format, prompt) {
        (JudgeFormat::Text, JudgePrompt::Nep) => parse_nep(answer),
        (JudgeFormat::Text, JudgePrompt::ZedQa) => {
            let body =
                fence_body(answer).unwrap_or_else(|| match (answer.find('{'), answer.rfind('}')) {
                    (Some(open), Some(close)) if open < close => &answer[open..=close],
                    _ => "",
                });
            zed_qa_fields(&object(body, answer)?, answer)
        }
        (_, JudgePrompt::Nep) => {
            let yes = object(answer, answer)?
                .get("answer")
                .and_then(Value::as_str)
                .and_then(|word| match word {
                    "yes" => Some(true),
                    "no" => Some(false),
                    _ => None,
                })
                .ok_or_else(|| AnswerError::NoYesOrNoField(quoted(answer)))?;
            Ok(Verdict::Nep { yes })
        }
        (_, JudgePrompt::ZedQa) => zed_qa_fields(&object(answer, answer)?, answer),
    }
}

fn parse_nep(answer: &str) -> Result<Verdict, AnswerError> {
    let start = answer.trim_start_matches(|c: char| c.is_whitespace() || "*\"'`".contains(c));
    let word: String = start
        .chars()
        .take_while(|c| c.is_alphabetic())
        .collect::<String>()
        .to_lowercase();
    match word.as_str() {
        "yes" => Ok(Verdict::Nep { yes: true }),
        "no" => Ok(Verdict::Nep { yes: false }),
        _ => Err(AnswerError::NotYesOrNo(quoted(answer))),
    }
}

/// `body` (a part of `answer`) as a JSON object.
fn object(body: &str, answer: &str) -> Result<serde_json::Map<String, Value>, AnswerError> {
    match serde_json::from_str(body.trim()) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(AnswerError::NoObject(quoted(answer))),
    }
}

/// `zed-qa`'s verdict from the object read out of `answer`.
fn zed_qa_fields(
    object: &serde_json::Map<String, Value>,
    answer: &str,
) -> Result<Verdict, AnswerError> {
    let reverts_edits = object
        .get("reverts_edits")
        .and_then(Value::as_bool)
        .ok_or_else(|| AnswerError::NoRevertsEdits(quoted(answer)))?;
    let confidence = object
        .get("confidence")
        .and_then(Value::as_u64)
        .filter(|c| (1..=5).contains(c))
        .ok_or_else(|| AnswerError::NoConfidence(quoted(answer)))?;
    Ok(Verdict::ZedQa {
        reverts_edits,
        confidence: confidence as u8,
    })
}

/// The text inside the first code fence of `answer` (its info string dropped), if it
/// has a closed one.
fn fence_body(answer: &str) -> Option<&str> {
    let open = answer.find("```")?;
    let after = &answer[open..];
    let ticks = after.chars().take_while(|&c| c == '`').count();
    let rest = &after[ticks..];
    let body_start = rest.find('\n')? + 1;
    let body = &rest[body_start..];
    let close = body.find(&"`".repeat(ticks))?;
    Some(&body[..close])
}

/// The start of an answer, as a failure message repeats it.
fn quoted(answer: &str) -> String {
    let cut: String = answer.chars().take(QUOTED_CHARS).collect();
    let more = if answer.chars().count() > QUOTED_CHARS {
        "…"
    } else {
        ""
    };
    format!("{cut:?}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> JudgeCase {
        JudgeCase {
            file: "a.py".into(),
            start_line: 4,
            before: "x = 1\ny = 2\n".into(),
            gold: "x = 1\ny = 3\n".into(),
            predicted: "x = 1\ny = 4\n".into(),
            history: "--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-a\n+b\n".into(),
        }
    }

    #[test]
    fn nep_reads_the_first_word_and_nothing_else() {
        let yes = Ok(Verdict::Nep { yes: true });
        let no = Ok(Verdict::Nep { yes: false });
        for (answer, expected) in [
            ("yes", &yes),
            ("Yes.", &yes),
            ("  **YES** it is", &yes),
            ("\"no\"", &no),
            ("No, it deletes the loop", &no),
        ] {
            assert_eq!(
                &parse(JudgePrompt::Nep, JudgeFormat::Text, answer),
                expected,
                "{answer}"
            );
        }
        for answer in ["I cannot help with that", "yesterday", "", "y", "maybe yes"] {
            let error = parse(JudgePrompt::Nep, JudgeFormat::Text, answer)
                .unwrap_err()
                .to_string();
            assert!(error.contains("does not start with yes or no"), "{error}");
        }
    }

    #[test]
    fn zed_qa_reads_a_json_object_with_both_fields_in_range() {
        let verdict = |reverts_edits, confidence| {
            Ok(Verdict::ZedQa {
                reverts_edits,
                confidence,
            })
        };
        for (answer, expected) in [
            (
                r#"{"reverts_edits": false, "confidence": 4}"#,
                verdict(false, 4),
            ),
            (
                "Here:\n```json\n{\"reasoning\": \"a } b\", \"reverts_edits\": true, \"confidence\": 1}\n```\nDone {",
                verdict(true, 1),
            ),
            (
                "sure {\"confidence\": 5, \"reverts_edits\": false} ok",
                verdict(false, 5),
            ),
        ] {
            assert_eq!(
                parse(JudgePrompt::ZedQa, JudgeFormat::Text, answer),
                expected,
                "{answer}"
            );
        }
        for (answer, why) in [
            ("I cannot help", "holds no JSON object"),
            ("{not json}", "holds no JSON object"),
            ("[1, 2]", "holds no JSON object"),
            (
                r#"{"reverts_edits": "no", "confidence": 3}"#,
                "no boolean reverts_edits",
            ),
            (r#"{"reverts_edits": true}"#, "no confidence from 1 to 5"),
            (
                r#"{"reverts_edits": true, "confidence": 6}"#,
                "no confidence from 1 to 5",
            ),
            (
                r#"{"reverts_edits": true, "confidence": 2.5}"#,
                "no confidence from 1 to 5",
            ),
            (
                r#"{"reverts_edits": true, "confidence": 0}"#,
                "no confidence from 1 to 5",
            ),
        ] {
            let error = parse(JudgePrompt::ZedQa, JudgeFormat::Text, answer)
                .unwrap_err()
                .to_string();
            assert!(error.contains(why), "{answer}: {error}");
        }
    }

    #[test]
    fn a_structured_answer_is_one_json_object_with_the_schemas_fields() {
        for format in [JudgeFormat::JsonSchema, JudgeFormat::LlamaJson] {
            for (prompt, answer, expected) in [
                (
                    JudgePrompt::Nep,
                    r#"{ "answer":"no"}"#,
                    Verdict::Nep { yes: false },
                ),
                (
                    JudgePrompt::Nep,
                    "\n{\"answer\": \"yes\"} ",
                    Verdict::Nep { yes: true },
                ),
                (
                    JudgePrompt::ZedQa,
                    r#"{ "reverts_edits" : true, "confidence":5}"#,
                    Verdict::ZedQa {
                        reverts_edits: true,
                        confidence: 5,
                    },
                ),
            ] {
                assert_eq!(parse(prompt, format, answer), Ok(expected), "{answer}");
            }
            for (prompt, answer, why) in [
                // Free text is not read when an object was asked for.
                (JudgePrompt::Nep, "yes", "holds no JSON object"),
                (
                    JudgePrompt::Nep,
                    r#"{"answer": "Yes"}"#,
                    "no answer \"yes\" or \"no\"",
                ),
                (
                    JudgePrompt::Nep,
                    r#"{"answer": true}"#,
                    "no answer \"yes\" or \"no\"",
                ),
                (
                    JudgePrompt::Nep,
                    r#"{"answer": "yes""#,
                    "holds no JSON object",
                ),
                (
                    JudgePrompt::ZedQa,
                    "```json\n{\"reverts_edits\": true, \"confidence\": 1}\n```",
                    "holds no JSON object",
                ),
                (
                    JudgePrompt::ZedQa,
                    r#"{"reverts_edits": true, "confidence": 9}"#,
                    "no confidence from 1 to 5",
                ),
            ] {
                let error = parse(prompt, format, answer).unwrap_err().to_string();
                assert!(error.contains(why), "{answer}: {error}");
            }
        }
    }

    #[test]
    fn each_format_asks_for_the_schema_its_servers_read() {
        assert_eq!(response_format(JudgePrompt::Nep, JudgeFormat::Text), None);
        assert_eq!(
            response_format(JudgePrompt::Nep, JudgeFormat::JsonSchema),
            Some(json!({
                "type": "json_schema",
                "json_schema": {
                    "name": "nep_verdict",
                    "strict": true,
                    "schema": {
                        "type": "object",
                        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                        "required": ["answer"],
                        "additionalProperties": false,
                    },
                },
            }))
        );
        assert_eq!(
            response_format(JudgePrompt::ZedQa, JudgeFormat::LlamaJson),
            Some(json!({
                "type": "json_object",
                "schema": {
                    "type": "object",
                    "properties": {
                        "reverts_edits": {"type": "boolean"},
                        "confidence": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": 5,
                            "enum": [1, 2, 3, 4, 5],
                        },
                    },
                    "required": ["confidence", "reverts_edits"],
                    "additionalProperties": false,
                },
            }))
        );
    }

    #[test]
    fn the_prompts_show_the_case_nep_with_the_ground_truth_zed_qa_without() {
        let Prompt::Chat { system, user } = render(JudgePrompt::Nep, &case()) else {
            panic!("a chat prompt");
        };
        assert!(system.ends_with("Answer with one word, yes or no, and nothing else."));
        assert!(user.contains("### Code now (a.py, lines 5-6)\n```\nx = 1\ny = 2\n```"));
        assert!(user.contains("real next edit\n```\nx = 1\ny = 3\n```"));
        assert!(user.contains("predicted edit\n```\nx = 1\ny = 4\n```"));
        let Prompt::Chat { user, .. } = render(JudgePrompt::ZedQa, &case()) else {
            panic!("a chat prompt");
        };
        assert!(!user.contains("y = 3"), "{user}");
        assert!(user.contains("-y = 2\n+y = 4\n"), "{user}");
        assert!(user.contains("\"reverts_edits\": true or false"));
        assert_eq!(fenced("a ``` b"), "````\na ``` b\n````");
    }
}
