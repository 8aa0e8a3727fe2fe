//! API Priority and Fairness: the FlowSchemas and PriorityLevelConfigurations every cluster has
//! ([`bootstrap`]).

pub mod bootstrap;
