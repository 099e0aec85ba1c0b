//! The gzip thread: inflates the archive into recycled buffers and hands them to
//! the tar reader through a bounded channel, so inflate and file creation overlap
//! (as GNU tar's gzip child does) in a fixed, small amount of memory.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flate2::read::MultiGzDecoder;

use super::{Trust, UntarError};

/// Size of one decompressed chunk passed from the gzip thread to the tar reader.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the threads: bounds memory to about 4 MiB.
const CHUNKS_IN_FLIGHT: usize = 16;

/// Start the gzip thread; the reader gets its chunks.
pub(super) fn spawn_decoder(
    file: File,
    trust: &Trust,
    archive: &Path,
) -> Result<(ChannelReader, thread::JoinHandle<()>), UntarError> {
    // A gzip bomb is stopped at the source: the decoder refuses to produce
    // more than the caps allow (contents + one header block pair per entry).
    let decompressed_cap = match trust {
        Trust::Own => u64::MAX,
        Trust::Untrusted(l) => l.max_bytes.saturating_add(l.max_entries.saturating_mul(2048)).saturating_add(1 << 20),
    };
    let (full_tx, full_rx) = sync_channel::<io::Result<Vec<u8>>>(CHUNKS_IN_FLIGHT);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 1);
    let decoder = thread::Builder::new()
        .name("fsbench-gunzip".into())
        .spawn(move || decode_thread(file, full_tx, empty_rx, decompressed_cap))
        .map_err(|source| UntarError::Read { path: archive.into(), source })?;
    Ok((ChannelReader { rx: full_rx, recycle: empty_tx, cur: Vec::new(), pos: 0 }, decoder))
}

/// Gzip thread: inflate into recycled buffers and hand them over full.
fn decode_thread(file: File, tx: SyncSender<io::Result<Vec<u8>>>, recycle: Receiver<Vec<u8>>, cap: u64) {
    let mut gz = MultiGzDecoder::new(BufReader::with_capacity(CHUNK, file));
    let mut total: u64 = 0;
    loop {
        let mut buf = recycle.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        buf.resize(CHUNK, 0);
        let mut filled = 0;
        while filled < CHUNK {
            match gz.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        buf.truncate(filled);
        total += filled as u64;
        if total > cap {
            let _ = tx.send(Err(io::Error::other(format!(
                "decompressed stream exceeds {cap} bytes (gzip bomb or limits too low)"
            ))));
            return;
        }
        let eof = filled == 0;
        if tx.send(Ok(buf)).is_err() || eof {
            return;
        }
    }
}

/// `Read` over the chunks sent by the gzip thread; an empty chunk is EOF.
pub(super) struct ChannelReader {
    rx: Receiver<io::Result<Vec<u8>>>,
    recycle: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.cur.len() {
            match self.rx.recv() {
                Ok(Ok(next)) => {
                    let old = std::mem::replace(&mut self.cur, next);
                    self.pos = 0;
                    let _ = self.recycle.try_send(old);
                    if self.cur.is_empty() {
                        return Ok(0);
                    }
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
