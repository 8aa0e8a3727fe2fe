//! `autoscaling/v2` and `autoscaling/v1`: one file per kind (and one for what several of its kinds share).

pub mod horizontalpodautoscaler;
