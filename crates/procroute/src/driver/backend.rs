//! One interface to the durable state (STORE-4, STORE-7): whole-file
//! snapshots ([`Files`]), the journal ([`super::journal::JournalFiles`]) and
//! SQLite (`super::sqlite::SqliteJournal`, feature `sqlite`) are each a
//! [`Backend`], and [`super::Runtime`] is generic over it. The checking kit
//! runs the same crash-point and recovery tests through this trait for all
//! three.

use crate::delta::Durability;
use crate::gateway::{FileKind, Output};
use crate::persist::{Persist, PersistError};

/// Where a gateway's durable state lives. A backend carries out the
/// gateway's persistence outputs, in order, and gives the three file images
/// back to recovery ([`crate::gateway::Gateway::recover`]).
///
/// Which output it carries out follows from [`Backend::durability`]: a
/// snapshot backend stores [`Output::Persist`], a journaling one appends
/// [`Output::Append`]. The other kind is refused: nothing a gateway
/// configured for the other backend promises would be durable.
pub trait Backend {
    /// The durability a gateway writing here must be configured with.
    fn durability(&self) -> Durability;

    /// The three file images as recovery reads them — store, checkpoint,
    /// delivery log; `None` for a file never written — read from the
    /// medium again, as after a crash (a journal or a database is opened
    /// anew). A damaged medium is refused with a typed error.
    fn load(&mut self) -> Result<[Option<Vec<u8>>; 3], PersistError>;

    /// Makes one persistence output durable before returning. Outputs that
    /// are not about persistence are not the backend's business: `Ok`,
    /// nothing done.
    fn write(&mut self, output: &Output) -> Result<(), PersistError>;

    /// Whether it has grown enough to be compacted (journals only).
    fn wants_compaction(&self) -> bool {
        false
    }

    /// Replaces what it holds by these images (from
    /// [`crate::gateway::Gateway::compact`]); safe to crash at any step.
    /// Snapshots have nothing to compact.
    fn compact(&mut self, images: [Vec<u8>; 3]) -> Result<(), PersistError> {
        let _ = images;
        Ok(())
    }
}

/// The refusal of a persistence output of the other durability.
pub(crate) fn mismatch(backend: &str, output: &Output) -> PersistError {
    let kind = match output {
        Output::Persist { .. } => "a whole-file snapshot",
        _ => "journal records",
    };
    PersistError::Io {
        file: backend.to_owned(),
        source: std::io::Error::other(format!(
            "the gateway wrote {kind}, which this backend does not keep: \
             its configured durability does not match the backend's"
        )),
    }
}

/// The three snapshot files (STORE-4), each on its own [`Persist`]: the
/// real disk ([`super::files::FilePersist`]), memory, or a simulated disk.
pub struct Files<P: Persist = Box<dyn Persist + Send>> {
    /// The session store's file.
    pub store: P,
    /// The process registry's checkpoint.
    pub checkpoint: P,
    /// The delivery log.
    pub delivery: P,
}

impl<P: Persist> Files<P> {
    fn file(&mut self, kind: FileKind) -> &mut P {
        match kind {
            FileKind::Store => &mut self.store,
            FileKind::Checkpoint => &mut self.checkpoint,
            FileKind::Delivery => &mut self.delivery,
        }
    }
}

impl<P: Persist> Backend for Files<P> {
    fn durability(&self) -> Durability {
        Durability::Snapshots
    }

    fn load(&mut self) -> Result<[Option<Vec<u8>>; 3], PersistError> {
        Ok([
            self.store.load()?,
            self.checkpoint.load()?,
            self.delivery.load()?,
        ])
    }

    fn write(&mut self, output: &Output) -> Result<(), PersistError> {
        match output {
            Output::Persist { file, bytes } => self.file(*file).store(bytes),
            Output::Append { .. } => Err(mismatch(&self.store.name(), output)),
            _ => Ok(()),
        }
    }
}

/// A boxed backend is one: a runtime can choose its backend at run time
/// (`Runtime<A, Box<dyn Backend>>`).
impl<B: Backend + ?Sized> Backend for Box<B> {
    fn durability(&self) -> Durability {
        (**self).durability()
    }
    fn load(&mut self) -> Result<[Option<Vec<u8>>; 3], PersistError> {
        (**self).load()
    }
    fn write(&mut self, output: &Output) -> Result<(), PersistError> {
        (**self).write(output)
    }
    fn wants_compaction(&self) -> bool {
        (**self).wants_compaction()
    }
    fn compact(&mut self, images: [Vec<u8>; 3]) -> Result<(), PersistError> {
        (**self).compact(images)
    }
}
