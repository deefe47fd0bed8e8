//! What a component (the store, the registry, the delivery engine) changed
//! since its changes were last taken: the journal's records are built from
//! it (`delta`). A module of its own so that the components need nothing
//! of `delta`, which needs them.

/// A component's changes not yet taken; `full` when the next take must
/// be the whole image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes<T> {
    pub(crate) set: T,
    pub(crate) full: bool,
}

impl<T: Default> Changes<T> {
    pub(crate) fn new(full: bool) -> Changes<T> {
        Changes {
            set: T::default(),
            full,
        }
    }
}
