//! The audit log file, kept as kube-apiserver keeps it (`--audit-log-maxsize`, `--audit-log-
//! maxbackup`, `--audit-log-maxage`, `--audit-log-compress`): an event that would take the file past
//! its size goes to a new file, the old one renamed beside it with the time of the rename
//! (`audit-2026-11-29T10-54-01.123.log`, UTC); renamed files past the count to keep, or older than
//! the days to keep, are removed; with compression, renamed files are gzipped.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};

/// The size at which a file is rotated when `--audit-log-maxsize` is 0, as in kube-apiserver.
const DEFAULT_MAX_MB: u64 = 100;
/// The time stamp in a rotated file's name.
const STAMP: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// When files are rotated and which rotated ones are kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rotation {
    /// `--audit-log-maxsize`, in megabytes (0: 100).
    pub max_mb: u64,
    /// `--audit-log-maxbackup` (0: all).
    pub max_backups: usize,
    /// `--audit-log-maxage`, in days (0: forever).
    pub max_age_days: u64,
    /// `--audit-log-compress`.
    pub compress: bool,
}

impl Rotation {
    fn max_bytes(&self) -> u64 {
        (if self.max_mb == 0 { DEFAULT_MAX_MB } else { self.max_mb }) << 20
    }
}

/// The log being written and how it rotates.
pub struct LogFile {
    path: PathBuf,
    out: BufWriter<File>,
    size: u64,
    rotation: Rotation,
}

/// Bytes of events gathered before a write to the file (each flush writes what is gathered).
const BUFFER: usize = 64 * 1024;

/// Opens the file to append to, readable by its owner only (events name users and may hold
/// Secrets).
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

impl LogFile {
    pub fn open(path: &Path, rotation: Rotation) -> io::Result<LogFile> {
        let file = open(path)?;
        let size = file.metadata()?.len();
        Ok(LogFile { path: path.to_path_buf(), out: BufWriter::with_capacity(BUFFER, file), size, rotation })
    }

    /// Appends one event's line, first starting a new file when it would not fit.
    pub fn append(&mut self, line: &[u8]) -> io::Result<()> {
        let max = self.rotation.max_bytes();
        if line.len() as u64 > max {
            return Err(io::Error::other(format!("an event of {} bytes exceeds the audit log's maximum file size", line.len())));
        }
        if self.size + line.len() as u64 > max {
            self.rotate(Utc::now())?;
        }
        self.out.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Renames the current file with `now`'s stamp, begins a new one, and prunes the renamed.
    fn rotate(&mut self, now: DateTime<Utc>) -> io::Result<()> {
        self.out.flush()?;
        let renamed = backup_name(&self.path, now);
        std::fs::rename(&self.path, &renamed)?;
        self.out = BufWriter::with_capacity(BUFFER, open(&self.path)?);
        self.size = 0;
        if self.rotation.compress {
            if let Err(e) = gzip(&renamed) {
                tracing::warn!(error = %e, file = %renamed.display(), "compressing a rotated audit log");
            }
        }
        prune(&self.path, &self.rotation, now);
        Ok(())
    }
}

/// `dir/audit.log` rotated at `at`: `dir/audit-<stamp>.log`.
fn backup_name(path: &Path, at: DateTime<Utc>) -> PathBuf {
    let (prefix, ext) = name_parts(path);
    path.with_file_name(format!("{prefix}-{}{ext}", at.format(STAMP)))
}

/// The file name before its extension, and the extension with its dot.
fn name_parts(path: &Path) -> (String, String) {
    let stem = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    (stem, ext)
}

/// Gzips `file` to `file.gz`, then removes it.
fn gzip(file: &Path) -> io::Result<()> {
    let gz = PathBuf::from(format!("{}.gz", file.display()));
    let mut encoder = flate2::write::GzEncoder::new(BufWriter::new(open(&gz)?), flate2::Compression::default());
    io::copy(&mut File::open(file)?, &mut encoder)?;
    encoder.finish()?.flush()?;
    std::fs::remove_file(file)
}

/// Removes rotated files of `path` past the count to keep or older than the days to keep.
fn prune(path: &Path, rotation: &Rotation, now: DateTime<Utc>) {
    let mut rotated = rotated_files(path);
    // Newest first.
    rotated.sort_by(|a, b| b.0.cmp(&a.0));
    let max_age = Duration::from_secs(rotation.max_age_days * 24 * 3600);
    for (i, (stamp, file)) in rotated.iter().enumerate() {
        let too_many = rotation.max_backups > 0 && i >= rotation.max_backups;
        let too_old = rotation.max_age_days > 0 && (now - *stamp).to_std().is_ok_and(|age| age > max_age);
        if too_many || too_old {
            if let Err(e) = std::fs::remove_file(file) {
                tracing::warn!(error = %e, file = %file.display(), "removing a rotated audit log");
            }
        }
    }
}

/// The rotated files of `path` beside it, with the time in their names.
fn rotated_files(path: &Path) -> Vec<(DateTime<Utc>, PathBuf)> {
    let (prefix, ext) = name_parts(path);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            let stamp = name.strip_prefix(&format!("{prefix}-"))?;
            let stamp = stamp.strip_suffix(".gz").unwrap_or(stamp).strip_suffix(ext.as_str())?;
            let at = NaiveDateTime::parse_from_str(stamp, STAMP).ok()?.and_utc();
            Some((at, e.path()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_full_file_is_renamed_with_its_time_and_lines_stay_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut log = LogFile::open(&path, Rotation { max_mb: 1, ..Default::default() }).unwrap();
        let line = [vec![b'x'; 999], vec![b'\n']].concat();
        for _ in 0..1100 {
            log.append(&line).unwrap();
        }
        log.flush().unwrap();
        let files = names(dir.path());
        assert_eq!(files.len(), 2, "{files:?}");
        let rotated = &files[0];
        assert!(rotated.starts_with("audit-") && rotated.ends_with(".log"), "{rotated}");
        let full = std::fs::read(dir.path().join(rotated)).unwrap();
        assert_eq!(full.len(), 1048 * 1000, "only whole lines up to 1 MiB");
        assert_eq!(std::fs::read(&path).unwrap().len(), 52 * 1000);
        assert!(LogFile::open(&path, Rotation { max_mb: 1, ..Default::default() }).unwrap().append(&vec![b'y'; 2 << 20]).is_err());
    }

    #[test]
    fn rotated_files_past_the_count_or_the_age_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let now = Utc::now();
        for days in [1, 2, 3, 10] {
            std::fs::write(backup_name(&path, now - chrono::Duration::days(days)), "old\n").unwrap();
        }
        std::fs::write(dir.path().join("other-2020-01-01T00-00-00.000.log"), "not ours\n").unwrap();
        prune(&path, &Rotation { max_age_days: 5, ..Default::default() }, now);
        assert_eq!(names(dir.path()).len(), 4, "{:?}", names(dir.path()));
        prune(&path, &Rotation { max_backups: 2, ..Default::default() }, now);
        let left = names(dir.path());
        assert_eq!(left.len(), 3, "{left:?}");
        assert!(left.contains(&backup_name(&path, now - chrono::Duration::days(1)).file_name().unwrap().to_string_lossy().into_owned()), "{left:?}");
    }

    #[test]
    fn compressed_rotations_are_gzipped_and_still_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut log = LogFile::open(&path, Rotation { max_mb: 1, max_backups: 1, compress: true, ..Default::default() }).unwrap();
        std::fs::write(backup_name(&path, Utc::now() - chrono::Duration::days(1)) , "old\n").unwrap();
        let line = [vec![b'x'; 1023], vec![b'\n']].concat();
        for _ in 0..1500 {
            log.append(&line).unwrap();
        }
        let files = names(dir.path());
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(files.iter().any(|f| f.ends_with(".log.gz")), "{files:?}");
    }
}
