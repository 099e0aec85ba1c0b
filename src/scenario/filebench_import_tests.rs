use super::*;
use crate::scenario::Workload;
use crate::scenario::ops_spec::{AppendLen, Flow, Op};

/// filebench's varmail.f (workloads/varmail.f, "Varmail Version 3.0"), as shipped.
const VARMAIL_F: &str = r#"
# comment
set $dir=/tmp
set $nfiles=1000
set $meandirwidth=1000000
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=16
set $iosize=1m
set $meanappendsize=16k

define fileset name=bigfileset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=80

define process name=filereader,instances=1
{
  thread name=filereaderthread,memsize=10m,instances=$nthreads
  {
    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop createfile name=createfile2,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand2,iosize=$meanappendsize,fd=1
    flowop fsync name=fsyncfile2,fd=1
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile3,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile3,fd=1,iosize=$iosize
    flowop appendfilerand name=appendfilerand3,iosize=$meanappendsize,fd=1
    flowop fsync name=fsyncfile3,fd=1
    flowop closefile name=closefile3,fd=1
    flowop openfile name=openfile4,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile4,fd=1,iosize=$iosize
    flowop closefile name=closefile4,fd=1
  }
}

echo  "Varmail Version 3.0 personality successfully loaded"

run 60
"#;

#[test]
fn varmail_f_imports_as_the_shipped_varmail_scenario_runs_it() {
    let imported = import(VARMAIL_F, "varmail-f").unwrap();
    let s = crate::scenario::parse_str(&imported.text, "varmail-f.toml")
        .unwrap_or_else(|e| panic!("{e}\n{}", imported.text));
    let Workload::Ops(o) = &s.workload else { panic!() };
    let shipped =
        crate::scenario::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/varmail.toml"))
            .unwrap();
    let Workload::Ops(want) = &shipped.workload else { panic!() };
    // The same fileset and the same loop of the same threads, op for op.
    assert_eq!(o.spec.filesets, want.spec.filesets, "{}", imported.text);
    assert_eq!(o.spec.groups.len(), 1);
    assert_eq!(o.spec.groups[0].threads, want.spec.groups[0].threads);
    let (Flow::Loop(ours), Flow::Loop(theirs)) = (&o.spec.groups[0].flow, &want.spec.groups[0].flow) else { panic!() };
    assert_eq!(ours, theirs, "{}", imported.text);
    assert!(ours.iter().any(|op| matches!(op, Op::Append { len: AppendLen::Uniform(_), .. })), "{ours:?}");
    assert_eq!(o.spec.stop.duration, Some(std::time::Duration::from_secs(60)));
    assert!(imported.notes.iter().any(|n| n.contains("`path` dropped")), "{:?}", imported.notes);
}

#[test]
fn what_is_outside_the_subset_is_refused_with_its_line() {
    let refused = |text: &str| import(text, "t").expect_err(text);
    let e = refused("define process name=p\n{\nthread name=t\n{\nflowop semblock name=s\n}\n}\n");
    assert_eq!(e.line, 5);
    assert!(e.message.contains("flowop `semblock`"), "{e}");
    assert_eq!(refused("set $x=$y\n").message, "`$y` is not set");
    assert!(refused("define randvar name=r\n").message.contains("`define randvar`"));
    assert!(refused("foo bar\n").message.contains("`foo`"));
    // A name that cannot be written into TOML is never written.
    let e = refused("define fileset name=a\"b,entries=1\n");
    assert!(e.message.contains("neither a number"), "{e}");
    // Unbalanced braces, flowops on undefined filesets, huge counts.
    assert!(
        refused("define process name=p\n{\nthread name=t\n{\nflowop fsync name=f\n").message.contains("not closed")
    );
    let e = refused("define process name=p\n{\nthread name=t\n{\nflowop statfile name=s,filesetname=nope\n}\n}\n");
    assert!(e.message.contains("fileset nope, which is not defined"), "{e}");
    assert!(refused("define fileset name=a,entries=1e12\n").message.contains("out of range"));
    assert!(refused(&"echo x\n".repeat(MAX_F_LINES + 1)).message.contains("more than"));
    assert!(refused("").message.contains("defines no process"));
}

#[test]
fn system_commands_are_noted_never_carried() {
    let text = format!("{VARMAIL_F}\nsystem \"rm -rf /\"\n");
    let imported = import(&text, "t").unwrap();
    assert!(!imported.text.contains("rm -rf"), "{}", imported.text);
    assert!(imported.notes.iter().any(|n| n.contains("`system` command not carried")));
}

#[test]
fn process_instances_become_worker_processes() {
    let f =
        VARMAIL_F.replace("define process name=filereader,instances=1", "define process name=filereader,instances=3");
    let imported = import(&f, "varmail-p").unwrap();
    let s = crate::scenario::parse_str(&imported.text, "varmail-p.toml")
        .unwrap_or_else(|e| panic!("{e}\n{}", imported.text));
    let Workload::Ops(o) = &s.workload else { panic!() };
    assert_eq!((o.spec.groups[0].threads, o.spec.groups[0].processes), (16, Some(3)), "{}", imported.text);
    let one = import(VARMAIL_F, "varmail-f").unwrap();
    assert!(!one.text.contains("processes"), "{}", one.text);
}
