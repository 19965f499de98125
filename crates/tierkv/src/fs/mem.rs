//! In-memory file system (being written).
/// placeholder
pub struct MemFs;
/// placeholder
pub struct FaultSpec;
/// placeholder
pub enum FsOp {}
