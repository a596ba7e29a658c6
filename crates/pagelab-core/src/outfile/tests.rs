use std::io::Write;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagelab-outfile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_committed_file_replaces_the_target_and_leaves_nothing_else() {
    let dir = scratch("commit");
    let target = dir.join("out.txt");
    std::fs::write(&target, "old").unwrap();
    let (out, mut f) = OutFile::create(&target).unwrap();
    f.write_all(b"new").unwrap();
    drop(f);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old", "not replaced before the commit");
    out.commit().unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    assert_eq!(listing(&dir), ["out.txt"]);
}

#[test]
fn an_uncommitted_file_is_removed_and_the_target_kept() {
    let dir = scratch("drop");
    let target = dir.join("out.txt");
    std::fs::write(&target, "old").unwrap();
    let before = cleanup::registered();
    {
        let (out, mut f) = OutFile::create(&target).unwrap();
        f.write_all(b"half").unwrap();
        assert!(out.temp_path().exists());
        assert!(out.temp_path().file_name().unwrap().to_string_lossy().starts_with('.'), "hidden");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    assert_eq!(listing(&dir), ["out.txt"]);
    assert!(cleanup::registered() <= before, "the guard was released");
}

#[test]
fn what_is_not_a_regular_file_is_refused_before_anything_is_written() {
    let dir = scratch("kinds");
    let fifo = dir.join("pipe");
    mkfifo(&fifo);
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
    std::os::unix::fs::symlink(&fifo, dir.join("to-pipe")).unwrap();
    for (name, what) in
        [("pipe", "named pipe"), ("sub", "directory"), ("dangling", "link to nothing"), ("to-pipe", "named pipe")]
    {
        let e = OutFile::create(&dir.join(name)).unwrap_err().to_string();
        assert!(e.contains(what) && e.contains(name), "{name}: {e}");
        assert!(!e.contains(".tmp"), "names the user's path only: {e}");
    }
    assert_eq!(listing(&dir), ["dangling", "pipe", "sub", "to-pipe"], "nothing written beside them");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is still one");
}

#[test]
fn a_link_to_a_file_keeps_the_link_and_replaces_the_file() {
    let dir = scratch("link");
    let real = dir.join("real.txt");
    std::fs::write(&real, "old").unwrap();
    let link = dir.join("link.txt");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (out, mut f) = OutFile::create(&link).unwrap();
    f.write_all(b"new").unwrap();
    drop(f);
    out.commit().unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
}

#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = scratch("input");
    let a = dir.join("a");
    std::fs::write(&a, "x").unwrap();
    let e = check_not_input(&a, &[&a]).unwrap_err().to_string();
    assert!(e.contains("is the input"), "{e}");
    check_not_input(&dir.join("b"), &[&a]).unwrap();
}

#[test]
fn registered_paths_are_what_the_handler_removes() {
    let dir = scratch("cleanup");
    let file = dir.join("f");
    std::fs::write(&file, "x").unwrap();
    let sub = dir.join("d");
    std::fs::create_dir(&sub).unwrap();
    let inner = sub.join("inner");
    std::fs::write(&inner, "x").unwrap();
    let (g1, g2, g3) = (cleanup::Guard::file(&file), cleanup::Guard::dir(&sub), cleanup::Guard::file(&inner));
    cleanup::remove_registered_under(&dir);
    assert!(!file.exists() && !inner.exists() && !sub.exists(), "files first, then the directory");
    drop((g1, g2, g3));
}
