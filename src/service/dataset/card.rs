//! The dataset card: `README.md` in the Hugging Face format. Its YAML header names one
//! data file per split (`configs:` → `data_files`) and the features (`dataset_info`),
//! so `datasets.load_dataset(DIR)` loads the directory as it is; the text below says
//! what the rows are, how they were made and split, and what their license is.

use super::{Column, DatasetKind};

/// One split as the card describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardSplit {
    /// Split name.
    pub name: String,
    /// Its data file, relative to the card.
    pub path: String,
    /// Rows.
    pub rows: usize,
    /// Repositories.
    pub repositories: usize,
}

/// What the card says beyond the columns and splits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardFacts {
    /// What the rows are.
    pub kind: DatasetKind,
    /// The `--split` as given (`train=0.8,eval=0.2`).
    pub split: String,
    /// The seed of the split.
    pub seed: u64,
    /// The nextedit version that wrote it.
    pub version: String,
}

/// The card's text.
pub fn dataset_card(facts: &CardFacts, columns: &[Column], splits: &[CardSplit]) -> String {
    let kind = facts.kind.name();
    let mut card = String::from("---\nlicense: other\n");
    card += &format!("pretty_name: nextedit {kind}\ntags:\n- code\n- next-edit-suggestion\n");
    card += "configs:\n- config_name: default\n  data_files:\n";
    for split in splits {
        card += &format!("  - split: {}\n    path: {}\n", split.name, split.path);
    }
    card += "dataset_info:\n  features:\n";
    for column in columns {
        card += &format!(
            "  - name: {}\n    dtype: {}\n",
            column.name,
            column.kind.dtype()
        );
    }
    card += "---\n\n";
    card += &format!("# nextedit {kind}\n\n");
    card += match facts.kind {
        DatasetKind::Trajectories => {
            "One row per trajectory: a developer's recorded editor session, a commit \
             derived into its edits and their partial order, or an imported task. \
             The `trajectory` column is the whole trajectory document as JSON \
             (schemas/trajectory.schema.json of nextedit): `json.loads(row[\"trajectory\"])`.\n\n"
        }
        DatasetKind::Results => {
            "One row per step of a replay run: a next-edit suggester was shown the state \
             before the step and its ranked predictions were matched to the gold edits \
             allowed next. The `predictions` column is the step's ranked predictions as a \
             JSON array.\n\n"
        }
        DatasetKind::Tasks => {
            "One row per completion task: a hole in one file of one exact state of a \
             repository (a commit's tree, or a recorded session at a pause), the text \
             before and after it, and what filled it (`ground_truth`). The columns are \
             the task file's fields (schemas/task.schema.json of nextedit); nested \
             fields (`source`, `state`, `cursor`, `context`, …) are JSON text: \
             `json.loads(row[\"state\"])`. A field a task leaves out is null.\n\n"
        }
    };
    card += "## How it was made\n\n";
    let from = match facts.kind {
        DatasetKind::Tasks => "a task file (`nextedit tasks cut`)",
        _ => "a nextedit database",
    };
    card += &format!(
        "Written by `nextedit export {kind}` (nextedit {}) from {from}. \
         Splits: `--split {} --by repo --seed {}`; every row of one repository is in \
         one split (repositories in a seeded order, each to the split furthest below its \
         share of the rows).\n\n",
        facts.version, facts.split, facts.seed
    );
    card += "| split | rows | repositories |\n|---|---|---|\n";
    for split in splits {
        card += &format!(
            "| {} | {} | {} |\n",
            split.name, split.rows, split.repositories
        );
    }
    card += "\n## Columns\n\n| column | type | null | what |\n|---|---|---|---|\n";
    for column in columns {
        card += &format!(
            "| `{}` | {} | {} | {} |\n",
            column.name,
            column.kind.dtype(),
            if column.nullable { "yes" } else { "no" },
            column.doc
        );
    }
    card += "\n## License\n\n\
        The rows quote source code from the repositories and sessions they come from; each \
        keeps the license of its repository (`license: other`). Check those licenses before \
        publishing this dataset. Recorded sessions passed nextedit's privacy rules (excluded \
        files, masked secrets), but read what you publish: a recording holds what its \
        developer typed.\n";
    card
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::dataset::ColumnType;

    #[test]
    fn header_lists_each_split_file_and_feature() {
        let columns = [Column {
            name: "id".into(),
            kind: ColumnType::Text,
            nullable: false,
            doc: "the id".into(),
        }];
        let splits = [CardSplit {
            name: "train".into(),
            path: "data/train.parquet".into(),
            rows: 3,
            repositories: 2,
        }];
        let facts = CardFacts {
            kind: DatasetKind::Results,
            split: "train=1".into(),
            seed: 42,
            version: "0.1.0".into(),
        };
        let card = dataset_card(&facts, &columns, &splits);
        let header = card.split("---\n").nth(1).unwrap();
        assert_eq!(
            header,
            "license: other\npretty_name: nextedit results\ntags:\n- code\n- next-edit-suggestion\n\
             configs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train.parquet\n\
             dataset_info:\n  features:\n  - name: id\n    dtype: string\n"
        );
        assert!(card.contains("| train | 3 | 2 |\n"));
        assert!(card.contains("| `id` | string | no | the id |\n"));
    }
}
