//! The registry table: every served resource, declared once. Group, version, kind and plural
//! come from the `k8s-openapi` type, so they cannot disagree with the schema.

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates, coordination, core, discovery, events, flowcontrol, networking, node,
    policy, rbac, resource, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
use k8s_openapi::Resource;

use super::kinds::{self, admissionregistration as admission, apiregistration as aggregation, apps as workloads, autoscaling as scaling, batch as jobs, core as corekinds, Strategy};
use super::kinds::{certificates as certs, flowcontrol as apf, networking as net, node as nodekinds, rbac as rbackinds, scheduling as sched};
use super::convert::StoredAs;
use super::{KindOps, ResourceInfo, ALL_VERBS, CREATE_ONLY};

/// The behaviour of one kind: `ops!(Type, "definition" [, strategy])`, the type giving its
/// decoding and schema, the strategy (the kind's file's `STRATEGY`) the rest.
macro_rules! ops {
    ($t:ty, $def:literal) => {
        ops!($t, $def, Strategy::NONE)
    };
    ($t:ty, $def:literal, $strategy:expr) => {
        &KindOps {
            decode: |_, v| kinds::decode::<$t>(v),
            default: |_, v| ($strategy.default)(v),
            validate: |_, v, old| match (old, $strategy.validate_update) {
                (Some(old), Some(update)) => update(old, v),
                _ => ($strategy.validate)(v),
            },
            strategy: $strategy,
            schema: <$t as schemars::JsonSchema>::json_schema,
            definition: $def,
        }
    };
}

/// One table row: `res!(Type, namespaced, "singular", [short names], [categories],
/// [subresources], has_generation, ops [, verbs = list])`.
macro_rules! res {
    ($t:ty, $ns:expr, $singular:literal, [$($short:literal),*], [$($cat:literal),*], [$($sub:literal),*], $gen:expr, $ops:expr) => {
        res!($t, $ns, $singular, [$($short),*], [$($cat),*], [$($sub),*], $gen, $ops, verbs = ALL_VERBS)
    };
    ($t:ty, $ns:expr, $singular:literal, [$($short:literal),*], [$($cat:literal),*], [$($sub:literal),*], $gen:expr, $ops:expr, verbs = $verbs:expr) => {
        ResourceInfo {
            group: <$t as Resource>::GROUP,
            version: <$t as Resource>::VERSION,
            resource: <$t as Resource>::URL_PATH_SEGMENT,
            singular: $singular,
            kind: <$t as Resource>::KIND,
            namespaced: $ns,
            short_names: &[$($short),*],
            categories: &[$($cat),*],
            subresources: &[$($sub),*],
            verbs: $verbs,
            has_generation: $gen,
            ops: $ops,
            introduced: None,
            stored_as: None,
        }
    };
}

/// A resource introduced (in this version) by the Kubernetes release `1.minor`.
const fn since(minor: u32, info: ResourceInfo) -> ResourceInfo {
    ResourceInfo { introduced: Some(crate::features::Version::new(1, minor)), ..info }
}

/// A resource whose objects are stored in another version.
const fn stored_as(info: ResourceInfo, stored: &'static StoredAs) -> ResourceInfo {
    ResourceInfo { stored_as: Some(stored), ..info }
}

const NS: bool = true;
const CLUSTER: bool = false;

pub static ALL: &[ResourceInfo] = &[
    // core/v1
    res!(core::v1::Namespace, CLUSTER, "namespace", ["ns"], [], ["status", "finalize"], false,
        ops!(core::v1::Namespace, "io.k8s.api.core.v1.Namespace", corekinds::namespace::STRATEGY), verbs = &["create", "delete", "get", "list", "patch", "update", "watch"]),
    res!(core::v1::ConfigMap, NS, "configmap", ["cm"], [], [], false,
        ops!(core::v1::ConfigMap, "io.k8s.api.core.v1.ConfigMap", corekinds::configmap::STRATEGY)),
    res!(core::v1::Secret, NS, "secret", [], [], [], false,
        ops!(core::v1::Secret, "io.k8s.api.core.v1.Secret", corekinds::secret::STRATEGY)),
    res!(core::v1::Pod, NS, "pod", ["po"], ["all"], ["status", "binding", "eviction", "ephemeralcontainers", "resize", "log", "exec", "attach", "portforward", "proxy"], true,
        ops!(core::v1::Pod, "io.k8s.api.core.v1.Pod", corekinds::pod::STRATEGY)),
    res!(core::v1::Service, NS, "service", ["svc"], ["all"], ["status", "proxy"], false,
        ops!(core::v1::Service, "io.k8s.api.core.v1.Service", corekinds::service::STRATEGY)),
    res!(core::v1::ServiceAccount, NS, "serviceaccount", ["sa"], [], ["token"], false,
        ops!(core::v1::ServiceAccount, "io.k8s.api.core.v1.ServiceAccount", corekinds::serviceaccount::STRATEGY)),
    res!(core::v1::Node, CLUSTER, "node", ["no"], [], ["status", "proxy"], false,
        ops!(core::v1::Node, "io.k8s.api.core.v1.Node", corekinds::node::STRATEGY)),
    res!(core::v1::Event, NS, "event", ["ev"], [], [], false,
        ops!(core::v1::Event, "io.k8s.api.core.v1.Event", corekinds::event::STRATEGY)),
    res!(core::v1::Endpoints, NS, "endpoints", ["ep"], [], [], false, ops!(core::v1::Endpoints, "io.k8s.api.core.v1.Endpoints", corekinds::endpoints::STRATEGY)),
    res!(core::v1::LimitRange, NS, "limitrange", ["limits"], [], [], false, ops!(core::v1::LimitRange, "io.k8s.api.core.v1.LimitRange", corekinds::limitrange::STRATEGY)),
    res!(core::v1::ResourceQuota, NS, "resourcequota", ["quota"], [], ["status"], false, ops!(core::v1::ResourceQuota, "io.k8s.api.core.v1.ResourceQuota", corekinds::resourcequota::STRATEGY)),
    res!(core::v1::PersistentVolume, CLUSTER, "persistentvolume", ["pv"], [], ["status"], false, ops!(core::v1::PersistentVolume, "io.k8s.api.core.v1.PersistentVolume", corekinds::persistentvolume::STRATEGY)),
    res!(core::v1::PersistentVolumeClaim, NS, "persistentvolumeclaim", ["pvc"], [], ["status"], false,
        ops!(core::v1::PersistentVolumeClaim, "io.k8s.api.core.v1.PersistentVolumeClaim", corekinds::persistentvolumeclaim::STRATEGY)),
    res!(core::v1::Binding, NS, "binding", [], [], [], false, ops!(core::v1::Binding, "io.k8s.api.core.v1.Binding"), verbs = CREATE_ONLY),
    res!(core::v1::ComponentStatus, CLUSTER, "componentstatus", ["cs"], [], [], false, ops!(core::v1::ComponentStatus, "io.k8s.api.core.v1.ComponentStatus", corekinds::componentstatus::STRATEGY), verbs = &["get", "list"]),
    res!(core::v1::PodTemplate, NS, "podtemplate", [], [], [], true, ops!(core::v1::PodTemplate, "io.k8s.api.core.v1.PodTemplate", corekinds::podtemplate::STRATEGY)),
    res!(core::v1::ReplicationController, NS, "replicationcontroller", ["rc"], ["all"], ["status", "scale"], true,
        ops!(core::v1::ReplicationController, "io.k8s.api.core.v1.ReplicationController", corekinds::replicationcontroller::STRATEGY)),
    // apps/v1
    res!(apps::v1::Deployment, NS, "deployment", ["deploy"], ["all"], ["status", "scale"], true,
        ops!(apps::v1::Deployment, "io.k8s.api.apps.v1.Deployment", workloads::deployment::STRATEGY)),
    res!(apps::v1::StatefulSet, NS, "statefulset", ["sts"], ["all"], ["status", "scale"], true,
        ops!(apps::v1::StatefulSet, "io.k8s.api.apps.v1.StatefulSet", workloads::statefulset::STRATEGY)),
    res!(apps::v1::DaemonSet, NS, "daemonset", ["ds"], ["all"], ["status"], true,
        ops!(apps::v1::DaemonSet, "io.k8s.api.apps.v1.DaemonSet", workloads::daemonset::STRATEGY)),
    res!(apps::v1::ReplicaSet, NS, "replicaset", ["rs"], ["all"], ["status", "scale"], true,
        ops!(apps::v1::ReplicaSet, "io.k8s.api.apps.v1.ReplicaSet", workloads::replicaset::STRATEGY)),
    res!(apps::v1::ControllerRevision, NS, "controllerrevision", [], [], [], false, ops!(apps::v1::ControllerRevision, "io.k8s.api.apps.v1.ControllerRevision", workloads::controllerrevision::STRATEGY)),
    // batch/v1
    res!(batch::v1::Job, NS, "job", [], ["all"], ["status"], true,
        ops!(batch::v1::Job, "io.k8s.api.batch.v1.Job", jobs::job::STRATEGY)),
    res!(batch::v1::CronJob, NS, "cronjob", ["cj"], ["all"], ["status"], true,
        ops!(batch::v1::CronJob, "io.k8s.api.batch.v1.CronJob", jobs::cronjob::STRATEGY)),
    // reviews: answered, never stored
    res!(authentication::v1::SelfSubjectReview, CLUSTER, "selfsubjectreview", [], [], [], false,
        ops!(authentication::v1::SelfSubjectReview, "io.k8s.api.authentication.v1.SelfSubjectReview"), verbs = CREATE_ONLY),
    res!(authentication::v1::TokenReview, CLUSTER, "tokenreview", [], [], [], false,
        ops!(authentication::v1::TokenReview, "io.k8s.api.authentication.v1.TokenReview"), verbs = CREATE_ONLY),
    res!(authorization::v1::LocalSubjectAccessReview, NS, "localsubjectaccessreview", [], [], [], false,
        ops!(authorization::v1::LocalSubjectAccessReview, "io.k8s.api.authorization.v1.LocalSubjectAccessReview"), verbs = CREATE_ONLY),
    res!(authorization::v1::SelfSubjectAccessReview, CLUSTER, "selfsubjectaccessreview", [], [], [], false,
        ops!(authorization::v1::SelfSubjectAccessReview, "io.k8s.api.authorization.v1.SelfSubjectAccessReview"), verbs = CREATE_ONLY),
    res!(authorization::v1::SelfSubjectRulesReview, CLUSTER, "selfsubjectrulesreview", [], [], [], false,
        ops!(authorization::v1::SelfSubjectRulesReview, "io.k8s.api.authorization.v1.SelfSubjectRulesReview"), verbs = CREATE_ONLY),
    res!(authorization::v1::SubjectAccessReview, CLUSTER, "subjectaccessreview", [], [], [], false,
        ops!(authorization::v1::SubjectAccessReview, "io.k8s.api.authorization.v1.SubjectAccessReview"), verbs = CREATE_ONLY),
    // other groups
    res!(coordination::v1::Lease, NS, "lease", [], [], [], false, ops!(coordination::v1::Lease, "io.k8s.api.coordination.v1.Lease", kinds::coordination::lease::STRATEGY)),
    res!(discovery::v1::EndpointSlice, NS, "endpointslice", [], [], [], true, ops!(discovery::v1::EndpointSlice, "io.k8s.api.discovery.v1.EndpointSlice", kinds::discovery::endpointslice::STRATEGY)),
    stored_as(
        res!(events::v1::Event, NS, "event", ["ev"], [], [], false, ops!(events::v1::Event, "io.k8s.api.events.v1.Event", corekinds::event::EVENTS_V1)),
        &corekinds::event::EVENTS_V1_STORED_AS_CORE,
    ),
    res!(networking::v1::Ingress, NS, "ingress", ["ing"], [], ["status"], true, ops!(networking::v1::Ingress, "io.k8s.api.networking.v1.Ingress", net::ingress::STRATEGY)),
    res!(networking::v1::IngressClass, CLUSTER, "ingressclass", [], [], [], true, ops!(networking::v1::IngressClass, "io.k8s.api.networking.v1.IngressClass", net::ingressclass::STRATEGY)),
    res!(networking::v1::NetworkPolicy, NS, "networkpolicy", ["netpol"], [], [], true, ops!(networking::v1::NetworkPolicy, "io.k8s.api.networking.v1.NetworkPolicy", net::networkpolicy::STRATEGY)),
    res!(policy::v1::PodDisruptionBudget, NS, "poddisruptionbudget", ["pdb"], [], ["status"], true, ops!(policy::v1::PodDisruptionBudget, "io.k8s.api.policy.v1.PodDisruptionBudget", kinds::policy::poddisruptionbudget::STRATEGY)),
    res!(rbac::v1::Role, NS, "role", [], [], [], false, ops!(rbac::v1::Role, "io.k8s.api.rbac.v1.Role", rbackinds::role::STRATEGY)),
    res!(rbac::v1::RoleBinding, NS, "rolebinding", [], [], [], false, ops!(rbac::v1::RoleBinding, "io.k8s.api.rbac.v1.RoleBinding", rbackinds::binding::STRATEGY)),
    res!(rbac::v1::ClusterRole, CLUSTER, "clusterrole", [], [], [], false, ops!(rbac::v1::ClusterRole, "io.k8s.api.rbac.v1.ClusterRole", rbackinds::role::STRATEGY)),
    res!(rbac::v1::ClusterRoleBinding, CLUSTER, "clusterrolebinding", [], [], [], false, ops!(rbac::v1::ClusterRoleBinding, "io.k8s.api.rbac.v1.ClusterRoleBinding", rbackinds::binding::STRATEGY)),
    res!(scheduling::v1::PriorityClass, CLUSTER, "priorityclass", ["pc"], [], [], true, ops!(scheduling::v1::PriorityClass, "io.k8s.api.scheduling.v1.PriorityClass", sched::priorityclass::STRATEGY)),
    res!(storage::v1::StorageClass, CLUSTER, "storageclass", ["sc"], [], [], false, ops!(storage::v1::StorageClass, "io.k8s.api.storage.v1.StorageClass", kinds::storage::storageclass::STRATEGY)),
    res!(storage::v1::CSIDriver, CLUSTER, "csidriver", [], [], [], false, ops!(storage::v1::CSIDriver, "io.k8s.api.storage.v1.CSIDriver", kinds::storage::csidriver::STRATEGY)),
    res!(storage::v1::CSINode, CLUSTER, "csinode", [], [], [], false, ops!(storage::v1::CSINode, "io.k8s.api.storage.v1.CSINode", kinds::storage::csinode::STRATEGY)),
    res!(storage::v1::VolumeAttachment, CLUSTER, "volumeattachment", [], [], ["status"], false, ops!(storage::v1::VolumeAttachment, "io.k8s.api.storage.v1.VolumeAttachment", kinds::storage::volumeattachment::STRATEGY)),
    res!(storage::v1::CSIStorageCapacity, NS, "csistoragecapacity", [], [], [], false, ops!(storage::v1::CSIStorageCapacity, "io.k8s.api.storage.v1.CSIStorageCapacity", kinds::storage::csistoragecapacity::STRATEGY)),
    res!(storage::v1::VolumeAttributesClass, CLUSTER, "volumeattributesclass", ["vac"], [], [], false, ops!(storage::v1::VolumeAttributesClass, "io.k8s.api.storage.v1.VolumeAttributesClass", kinds::storage::volumeattributesclass::STRATEGY)),
    res!(autoscaling::v2::HorizontalPodAutoscaler, NS, "horizontalpodautoscaler", ["hpa"], ["all"], ["status"], false,
        ops!(autoscaling::v2::HorizontalPodAutoscaler, "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", scaling::horizontalpodautoscaler::STRATEGY)),
    stored_as(
        res!(autoscaling::v1::HorizontalPodAutoscaler, NS, "horizontalpodautoscaler", ["hpa"], ["all"], ["status"], false,
            ops!(autoscaling::v1::HorizontalPodAutoscaler, "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", scaling::horizontalpodautoscaler::V1_STRATEGY)),
        &scaling::horizontalpodautoscaler::V1_STORED_AS_V2,
    ),
    res!(certificates::v1::CertificateSigningRequest, CLUSTER, "certificatesigningrequest", ["csr"], [], ["approval", "status"], false,
        ops!(certificates::v1::CertificateSigningRequest, "io.k8s.api.certificates.v1.CertificateSigningRequest", certs::certificatesigningrequest::STRATEGY)),
    res!(flowcontrol::v1::FlowSchema, CLUSTER, "flowschema", [], [], ["status"], true, ops!(flowcontrol::v1::FlowSchema, "io.k8s.api.flowcontrol.v1.FlowSchema", apf::flowschema::STRATEGY)),
    res!(flowcontrol::v1::PriorityLevelConfiguration, CLUSTER, "prioritylevelconfiguration", [], [], ["status"], true,
        ops!(flowcontrol::v1::PriorityLevelConfiguration, "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration", apf::prioritylevelconfiguration::STRATEGY)),
    res!(node::v1::RuntimeClass, CLUSTER, "runtimeclass", [], [], [], false, ops!(node::v1::RuntimeClass, "io.k8s.api.node.v1.RuntimeClass", nodekinds::runtimeclass::STRATEGY)),
    res!(networking::v1::IPAddress, CLUSTER, "ipaddress", ["ip"], [], [], false,
        ops!(networking::v1::IPAddress, "io.k8s.api.networking.v1.IPAddress", net::ipaddress::STRATEGY)),
    res!(networking::v1::ServiceCIDR, CLUSTER, "servicecidr", [], [], ["status"], false,
        ops!(networking::v1::ServiceCIDR, "io.k8s.api.networking.v1.ServiceCIDR", net::servicecidr::STRATEGY)),
    res!(resource::v1::DeviceClass, CLUSTER, "deviceclass", [], [], [], true, ops!(resource::v1::DeviceClass, "io.k8s.api.resource.v1.DeviceClass", kinds::resource::deviceclass::STRATEGY)),
    res!(resource::v1::ResourceClaim, NS, "resourceclaim", [], [], ["status"], false, ops!(resource::v1::ResourceClaim, "io.k8s.api.resource.v1.ResourceClaim", kinds::resource::resourceclaim::STRATEGY)),
    res!(resource::v1::ResourceClaimTemplate, NS, "resourceclaimtemplate", [], [], [], false, ops!(resource::v1::ResourceClaimTemplate, "io.k8s.api.resource.v1.ResourceClaimTemplate", kinds::resource::resourceclaimtemplate::STRATEGY)),
    res!(resource::v1::ResourceSlice, CLUSTER, "resourceslice", [], [], [], true, ops!(resource::v1::ResourceSlice, "io.k8s.api.resource.v1.ResourceSlice", kinds::resource::resourceslice::STRATEGY)),
    // admission configuration
    res!(admissionregistration::v1::MutatingWebhookConfiguration, CLUSTER, "mutatingwebhookconfiguration", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::MutatingWebhookConfiguration, "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration", admission::webhook_configuration::MUTATING)),
    res!(admissionregistration::v1::ValidatingWebhookConfiguration, CLUSTER, "validatingwebhookconfiguration", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::ValidatingWebhookConfiguration, "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration", admission::webhook_configuration::VALIDATING)),
    res!(admissionregistration::v1::ValidatingAdmissionPolicy, CLUSTER, "validatingadmissionpolicy", [], ["api-extensions"], ["status"], true,
        ops!(admissionregistration::v1::ValidatingAdmissionPolicy, "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy", admission::validating_policy::STRATEGY)),
    res!(admissionregistration::v1::ValidatingAdmissionPolicyBinding, CLUSTER, "validatingadmissionpolicybinding", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::ValidatingAdmissionPolicyBinding, "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding", admission::policy_binding::STRATEGY)),
    since(34, res!(admissionregistration::v1beta1::MutatingAdmissionPolicy, CLUSTER, "mutatingadmissionpolicy", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1beta1::MutatingAdmissionPolicy, "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicy", admission::mutating_policy::STRATEGY))),
    since(34, res!(admissionregistration::v1beta1::MutatingAdmissionPolicyBinding, CLUSTER, "mutatingadmissionpolicybinding", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1beta1::MutatingAdmissionPolicyBinding, "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicyBinding", admission::policy_binding::STRATEGY))),
    since(36, stored_as(res!(admissionregistration::v1::MutatingAdmissionPolicy, CLUSTER, "mutatingadmissionpolicy", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::MutatingAdmissionPolicy, "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy", admission::mutating_policy::STRATEGY)),
        &admission::mutating_policy::STORED_AS_V1BETA1)),
    since(36, stored_as(res!(admissionregistration::v1::MutatingAdmissionPolicyBinding, CLUSTER, "mutatingadmissionpolicybinding", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::MutatingAdmissionPolicyBinding, "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicyBinding", admission::policy_binding::STRATEGY)),
        &admission::mutating_policy::STORED_AS_V1BETA1)),
    res!(apiextensions::v1::CustomResourceDefinition, CLUSTER, "customresourcedefinition", ["crd", "crds"], ["api-extensions"], ["status"], true,
        ops!(apiextensions::v1::CustomResourceDefinition, "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            crate::crd::definition::STRATEGY)),
    res!(apiregistration::v1::APIService, CLUSTER, "apiservice", [], ["api-extensions"], ["status"], false,
        ops!(apiregistration::v1::APIService, "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", aggregation::apiservice::STRATEGY)),
];
