use super::*;
use crate::scenario::op_kinds::LOADFILE_OPS;

fn one(line: &str) -> Result<LoadOp, LoadfileError> {
    let lf = parse(line, "t.txt")?;
    assert_eq!(lf.ops.len(), 1);
    Ok(lf.ops[0].clone())
}

fn refused(text: &str) -> LoadfileError {
    parse(text, "t.txt").expect_err(text)
}

fn lp(parts: &[&str], per_client: bool) -> LoadPath {
    LoadPath { parts: parts.iter().map(|s| s.to_string()).collect(), per_client }
}

#[test]
fn every_op_parses_to_its_call() {
    let cases: Vec<(&str, Call)> = vec![
        (
            r#"NTCreateX "\clients\client1\~dmtmp\a.doc" 0x40 0x5 12 NT_STATUS_OK"#,
            Call::Create {
                path: lp(&["clients", "client1", "~dmtmp", "a.doc"], true),
                directory: false,
                disposition: 5,
                handle: 12,
            },
        ),
        (
            r#"NTCreateX "\clients\client1" 0x1 0x2 16385 NT_STATUS_OK"#,
            Call::Create { path: lp(&["clients", "client1"], true), directory: true, disposition: 2, handle: 16385 },
        ),
        ("Close 12 NT_STATUS_OK", Call::Close { handle: 12 }),
        (
            r#"Rename "\clients\client1\a" "\clients\client1\b c" NT_STATUS_OK"#,
            Call::Rename { from: lp(&["clients", "client1", "a"], true), to: lp(&["clients", "client1", "b c"], true) },
        ),
        (
            r#"Unlink "\clients\client1\a" 0x6 NT_STATUS_OK"#,
            Call::Unlink { path: lp(&["clients", "client1", "a"], true) },
        ),
        (r#"Deltree "\clients\client1" NT_STATUS_OK"#, Call::Deltree { path: lp(&["clients", "client1"], true) }),
        (r#"Mkdir "\clients" NT_STATUS_OK"#, Call::Mkdir { path: lp(&["clients"], false) }),
        (r#"Rmdir "\clients\client1\d" NT_STATUS_OK"#, Call::Rmdir { path: lp(&["clients", "client1", "d"], true) }),
        (
            r#"QUERY_PATH_INFORMATION "\clients\client1\a" 1004 NT_STATUS_OK"#,
            Call::QueryPath { path: lp(&["clients", "client1", "a"], true) },
        ),
        ("QUERY_FILE_INFORMATION 12 258 NT_STATUS_OK", Call::QueryFile { handle: 12 }),
        ("QUERY_FS_INFORMATION 1 NT_STATUS_OK", Call::QueryFs),
        ("SET_FILE_INFORMATION 12 1004 NT_STATUS_OK", Call::SetFile { handle: 12 }),
        (
            r#"FIND_FIRST "\clients\client1\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE"#,
            Call::Find { dir: lp(&["clients", "client1"], true), pattern: "FILLER.*".into() },
        ),
        ("WriteX 12 65536 4096 4096 NT_STATUS_OK", Call::Write { handle: 12, offset: 65536, size: 4096 }),
        ("ReadX 12 0 4096 4096 NT_STATUS_OK", Call::Read { handle: 12, offset: 0, size: 4096 }),
        ("LockX 12 2147483538 1 NT_STATUS_OK", Call::Lock { handle: 12, offset: 2147483538, len: 1 }),
        ("UnlockX 12 2147483538 1 NT_STATUS_OK", Call::Unlock { handle: 12, offset: 2147483538, len: 1 }),
        ("Flush 12 NT_STATUS_OK", Call::Flush { handle: 12 }),
    ];
    let mut seen = Vec::new();
    for (line, call) in cases {
        let op = one(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(op.call, call, "{line}");
        assert_eq!(op.expect_ok, !line.ends_with("NO_SUCH_FILE"), "{line}");
        // The table's key at the call's kind is the line's op: one table of keys and names.
        assert_eq!(LOADFILE_OPS[op.call.index()].0, line.split_whitespace().next().unwrap(), "{line}");
        seen.push(op.call.index());
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), LOADFILE_OPS.len(), "every kind has a case");
}

#[test]
fn timestamps_comments_blank_lines_and_error_statuses() {
    let text = "# a comment\n\n0.125 Close 3 NT_STATUS_OK\r\n  12.5 QUERY_PATH_INFORMATION \"\\x\\y\" 5 NT_STATUS_OBJECT_NAME_NOT_FOUND\n";
    let lf = parse(text, "t.txt").unwrap();
    assert_eq!(lf.ops.len(), 2);
    assert_eq!((lf.ops[0].line, lf.ops[0].expect_ok), (3, true));
    assert_eq!((lf.ops[1].line, lf.ops[1].expect_ok), (4, false));
    assert_eq!(lf.ops[1].call, Call::QueryPath { path: lp(&["x", "y"], false) });
}

#[test]
fn hostile_lines_are_refused_with_their_line_number() {
    let ok = "Close 1 NT_STATUS_OK\n";
    let bad: &[(&str, &str)] = &[
        (r#"Unlink "\clients\client1\..\..\etc\passwd" 0 NT_STATUS_OK"#, "`..`"),
        (r#"Unlink "\clients\.\a" 0 NT_STATUS_OK"#, "`.`"),
        (r#"Unlink "/etc/passwd" 0 NT_STATUS_OK"#, "does not start with"),
        (r#"Unlink "\clients\client1\/etc/passwd" 0 NT_STATUS_OK"#, "`/`"),
        ("Unlink \"\\clients\\a\u{1b}[2Jb\" 0 NT_STATUS_OK", "control character"),
        ("Unlink \"\\clients\\a\0b\" 0 NT_STATUS_OK", "control character"),
        (r#"Deltree "\" NT_STATUS_OK"#, "root"),
        ("WriteX 1 0 99999999999 4 NT_STATUS_OK", "larger than"),
        ("ReadX 1 18446744073709551615 4 4 NT_STATUS_OK", "larger than"),
        ("ReadX 1 0 99999999999999999999999 4 NT_STATUS_OK", "not a number"),
        ("ReadX -1 0 4 4 NT_STATUS_OK", "not a number"),
        ("NTCreateX \"\\a\" 0x40 0x9 1 NT_STATUS_OK", "disposition"),
        ("WriteX 1 0 4096", "status"),
        ("NTCreateX \"\\clients\\client1\\a 0x40 0x1 1 NT_STATUS_OK", "quote"),
        ("ReadX 1 0 NT_STATUS_OK", "takes"),
        ("Close 1 2 NT_STATUS_OK", "takes"),
        ("0.5", "no op"),
        ("Frobnicate 1 NT_STATUS_OK", "unknown op"),
        ("Closee 1 NT_STATUS_OK", "Close"),
    ];
    for (line, why) in bad {
        let e = refused(&format!("{ok}{ok}{line}\n{ok}"));
        assert_eq!(e.line, 3, "{line}: {e}");
        assert!(e.to_string().contains(why), "{line}: {e}");
        assert!(e.to_string().starts_with("line 3: "), "{e}");
    }
    let long = format!("{ok}Unlink \"\\{}\" 0 NT_STATUS_OK\n", "a".repeat(MAX_LINE_BYTES));
    assert_eq!(refused(&long).line, 2);
    let deep = format!("Unlink \"{}\" 0 NT_STATUS_OK\n", "\\d".repeat(MAX_PATH_PARTS + 1));
    assert!(refused(&deep).message.contains("components"));
}

#[test]
fn caps_on_the_whole_file_and_empty_files() {
    assert_eq!(refused("# nothing\n\n").message, "has no ops");
    let many = "\n".repeat(MAX_LOADFILE_LINES + 1);
    let e = refused(&many);
    assert_eq!(e.line, 0);
    assert!(e.message.contains("lines"), "{e}");
    let big = " ".repeat(MAX_LOADFILE_BYTES as usize + 1);
    assert!(refused(&big).message.contains("MiB"));
}

#[test]
fn find_patterns_match_case_insensitively_with_dos_wildcards() {
    assert!(matches("FILLER.*", "filler.000"));
    assert!(matches("*.DOC", "chap10.doc"));
    assert!(matches("a?c", "abc"));
    assert!(matches("<.JNK", "x.jnk"));
    assert!(matches("a>c\"txt", "abc.txt"));
    assert!(!matches("FILLER.*", "mixfile"));
    assert!(!matches("a?c", "ac"));
    assert!(matches("*", ""));
    assert!(!matches(&"*a".repeat(50), &"b".repeat(200)));
}
