//! x
pub enum StoreError { Compacted{requested:u64, compacted:u64}, TooLargeResourceVersion{requested:u64,current:u64}, NotLeader(String), Unavailable(String), Internal(String) }
