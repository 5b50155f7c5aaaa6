//! The crate's layers hold: a module of the library names only modules of lower layers, or
//! modules listed before it in its own layer, so there is no import circle. `LAYERS` is the
//! map `src/lib.rs` draws; a new module must be placed in it.
//!
//! Every `crate::<module>` path in `src/**/*.rs` outside comments and string literals counts
//! (in `use` lists too: `crate::{a, b::c}` names `a` and `b`); doc links do not. The binary
//! (`src/bin/`) only calls the front end, `cli`.

use std::path::{Path, PathBuf};

/// Bottom to top; inside a layer, a module may name the ones before it.
const LAYERS: &[(&str, &[&str])] = &[
    ("vocabulary", &["error", "value", "column", "size"]),
    ("table", &["table"]),
    (
        "language",
        &["predicate", "bound", "pruning", "filter", "workload"],
    ),
    ("layout", &["curve"]),
    ("planning", &["plan"]),
    (
        "measurement and the CPU stage",
        &["inspect", "report", "progress", "rewrite"],
    ),
    (
        "run preparation, commits, simulation, row fingerprints",
        &["prepare", "commit", "simulate", "gain", "verify"],
    ),
    (
        "jobs",
        &[
            "history",
            "vacuum",
            "workorder",
            "optimize",
            "sweep",
            "recommend",
        ],
    ),
    ("front end (feature cli)", &["cli"]),
];

/// The module's position: (layer, place in the layer).
fn rank(module: &str) -> Option<(usize, usize)> {
    LAYERS.iter().enumerate().find_map(|(layer, (_, modules))| {
        modules
            .iter()
            .position(|m| *m == module)
            .map(|place| (layer, place))
    })
}

/// `text` with comments, string and char literals blanked out (raw strings included), so
/// that only code is searched.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The top-level modules `code` names through `crate::`.
fn named_modules(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // `delta_layout_crate::` or `$crate::` are not this crate's paths.
        if code[..at]
            .chars()
            .last()
            .is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$')
        {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group: after `{` and after each `,` at depth 0.
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        names.push(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    names.retain(|n| n.chars().next().is_some_and(|c| c.is_ascii_lowercase()));
    names
}

/// The top-level module a source file belongs to: `src/plan/cuts.rs` is `plan`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `(file, module it names)` that breaks the layers.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let Some(module) = module_of(src, &file) else {
            continue;
        };
        if module == "lib" || module == "bin" {
            continue;
        }
        let Some(own) = rank(&module) else {
            found.push(format!(
                "{}: module '{module}' has no layer in tests/it/layers.rs",
                file.display()
            ));
            continue;
        };
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        for named in named_modules(&code) {
            if named == module {
                continue;
            }
            match rank(&named) {
                Some(other) if other < own => {}
                Some(_) => found.push(format!(
                    "{}: '{module}' ({}) names crate::{named} ({}), which is not below it",
                    file.display(),
                    LAYERS[own.0].0,
                    LAYERS[rank(&named).unwrap().0].0,
                )),
                None => {
                    // `crate::Error`, `crate::Result` (re-exports at the root) and the like.
                    if std::fs::metadata(src.join(format!("{named}.rs"))).is_ok()
                        || src.join(&named).is_dir()
                    {
                        found.push(format!(
                            "{}: names crate::{named}, which has no layer",
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn every_module_names_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(found.is_empty(), "layer violations:\n{}", found.join("\n"));
    // Every module the library declares has a layer.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    for line in code_only(&lib).lines() {
        if let Some(name) = line.trim().strip_prefix("pub mod ") {
            let name = name.trim_end_matches(';');
            assert!(rank(name).is_some(), "module '{name}' has no layer");
        }
    }
}

#[test]
fn the_checker_sees_a_name_pointing_up() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("table")).unwrap();
    std::fs::write(
        src.join("table/mod.rs"),
        "//! Uses [`crate::rewrite::X`] in a doc link: not code.\n\
         const S: &str = \"crate::optimize\";\n\
         const R: &str = r#\"crate::sweep \"quoted\" \"#;\n\
         const C: char = '\"';\n\
         fn f<'a>(x: &'a str) {}\n\
         use crate::{column::leaf_values, error::{Error, Result}, value};\n",
    )
    .unwrap();
    assert_eq!(violations(src), Vec::<String>::new());
    std::fs::write(
        src.join("table/read.rs"),
        "use crate::{error::Error, rewrite::{self, WrittenFile}};\n",
    )
    .unwrap();
    let found = violations(src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("'table' (table) names crate::rewrite (measurement and the CPU stage)"),
        "{found:?}"
    );
}
