//! The code of `docs/your-own-agent.md` is what this crate builds and
//! runs: each block that says `// from {file}` (or `# from {file}`) is, line
//! for line (indentation aside), a piece of that file.

use std::path::Path;

/// The guide's code blocks that name their file: (file, lines).
fn excerpts(guide: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut block: Option<Vec<String>> = None;
    for line in guide.lines() {
        match &mut block {
            None if line.starts_with("```") => block = Some(Vec::new()),
            None => {}
            Some(lines) if line.starts_with("```") => {
                let first = lines
                    .first()
                    .map(|l| l.trim().to_string())
                    .unwrap_or_default();
                let file = first
                    .strip_prefix("// from ")
                    .or_else(|| first.strip_prefix("# from "));
                if let Some(file) = file {
                    out.push((file.to_string(), lines[1..].to_vec()));
                }
                block = None;
            }
            Some(lines) => lines.push(line.to_string()),
        }
    }
    out
}

/// Whether `lines` (trimmed) come one after another in `text` (trimmed).
fn is_piece_of(lines: &[String], text: &str) -> bool {
    let wanted: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
    let have: Vec<&str> = text.lines().map(str::trim).collect();
    have.windows(wanted.len()).any(|w| w == wanted.as_slice())
}

#[test]
fn every_excerpt_of_the_guide_is_a_piece_of_its_file() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.join("../..");
    let guide = std::fs::read_to_string(root.join("docs/your-own-agent.md")).expect("the guide");
    let excerpts = excerpts(&guide);
    assert!(excerpts.len() >= 5, "{excerpts:#?}");
    for (file, lines) in excerpts {
        let text =
            std::fs::read_to_string(root.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            is_piece_of(&lines, &text),
            "the guide's excerpt of {file} is not in it:\n{}",
            lines.join("\n")
        );
    }
}

#[test]
fn a_changed_excerpt_is_caught() {
    let guide = "```rust\n// from a.rs\nfn a() {}\n    let x = 1;\n```\n";
    let (file, lines) = excerpts(guide).remove(0);
    assert_eq!(file, "a.rs");
    assert!(is_piece_of(&lines, "x\nfn a() {}\nlet x = 1;\n"));
    assert!(!is_piece_of(&lines, "fn a() {}\nlet x = 2;\n"));
}
