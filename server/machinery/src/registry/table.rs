//! The registry table: every served resource, declared once. Group, version, kind and plural
//! come from the `k8s-openapi` type, so they cannot disagree with the schema.

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates, coordination, core, discovery, events, flowcontrol, networking, node,
    policy, rbac, resource, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
use k8s_openapi::Resource;

use super::kinds::{self, *};
use super::convert::StoredAs;
use super::{KindOps, ResourceInfo, ALL_VERBS, CREATE_ONLY};

/// The behaviour of one kind: `ops!(Type, "definition", defaults, validation, columns, cells
/// [, update = rules])`.
macro_rules! ops {
    ($t:ty, $def:literal) => {
        ops!($t, $def, no_defaults, no_validation, &[], no_cells)
    };
    ($t:ty, $def:literal, $default:expr, $validate:expr) => {
        ops!($t, $def, $default, $validate, &[], no_cells)
    };
    ($t:ty, $def:literal, $default:expr, $validate:expr, $columns:expr, $cells:expr) => {
        ops!($t, $def, $default, $validate, $columns, $cells, update = no_update_rules)
    };
    ($t:ty, $def:literal, $default:expr, $validate:expr, $columns:expr, $cells:expr, update = $update:expr) => {
        &KindOps {
            decode: |_, v| kinds::decode::<$t>(v),
            default: |_, v| $default(v),
            validate: |_, v, _| $validate(v),
            update: $update,
            columns: $columns,
            cells: $cells,
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
            gate: None,
            stored_as: None,
        }
    };
}

/// A resource served only with its feature gate on.
const fn gated(info: ResourceInfo, gate: &'static str) -> ResourceInfo {
    ResourceInfo { gate: Some(gate), ..info }
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
        ops!(core::v1::Namespace, "io.k8s.api.core.v1.Namespace", defaults::namespace, no_validation, NAMESPACE_COLUMNS, namespace_cells)),
    res!(core::v1::ConfigMap, NS, "configmap", ["cm"], [], [], false,
        ops!(core::v1::ConfigMap, "io.k8s.api.core.v1.ConfigMap", no_defaults, validate::configmap, CONFIGMAP_COLUMNS, configmap_cells,
            update = immutable::data)),
    res!(core::v1::Secret, NS, "secret", [], [], [], false,
        ops!(core::v1::Secret, "io.k8s.api.core.v1.Secret", defaults::secret, validate::secret, SECRET_COLUMNS, secret_cells,
            update = immutable::data)),
    res!(core::v1::Pod, NS, "pod", ["po"], ["all"], ["status", "binding", "eviction"], true,
        ops!(core::v1::Pod, "io.k8s.api.core.v1.Pod", defaults::pod, validate::pod, POD_COLUMNS, pod_cells, update = immutable::pod)),
    res!(core::v1::Service, NS, "service", ["svc"], ["all"], ["status"], false,
        ops!(core::v1::Service, "io.k8s.api.core.v1.Service", defaults::service, validate::service, SERVICE_COLUMNS, service_cells,
            update = immutable::service)),
    res!(core::v1::ServiceAccount, NS, "serviceaccount", ["sa"], [], ["token"], false,
        ops!(core::v1::ServiceAccount, "io.k8s.api.core.v1.ServiceAccount", no_defaults, no_validation, SERVICEACCOUNT_COLUMNS, serviceaccount_cells)),
    res!(core::v1::Node, CLUSTER, "node", ["no"], [], ["status"], false,
        ops!(core::v1::Node, "io.k8s.api.core.v1.Node", no_defaults, no_validation, NODE_COLUMNS, node_cells)),
    res!(core::v1::Event, NS, "event", ["ev"], [], [], false,
        ops!(core::v1::Event, "io.k8s.api.core.v1.Event", no_defaults, no_validation, EVENT_COLUMNS, event_cells)),
    res!(core::v1::Endpoints, NS, "endpoints", ["ep"], [], [], false, ops!(core::v1::Endpoints, "io.k8s.api.core.v1.Endpoints")),
    res!(core::v1::LimitRange, NS, "limitrange", ["limits"], [], [], false, ops!(core::v1::LimitRange, "io.k8s.api.core.v1.LimitRange")),
    res!(core::v1::ResourceQuota, NS, "resourcequota", ["quota"], [], ["status"], false, ops!(core::v1::ResourceQuota, "io.k8s.api.core.v1.ResourceQuota")),
    res!(core::v1::PersistentVolume, CLUSTER, "persistentvolume", ["pv"], [], ["status"], false, ops!(core::v1::PersistentVolume, "io.k8s.api.core.v1.PersistentVolume")),
    res!(core::v1::PersistentVolumeClaim, NS, "persistentvolumeclaim", ["pvc"], [], ["status"], false,
        ops!(core::v1::PersistentVolumeClaim, "io.k8s.api.core.v1.PersistentVolumeClaim", defaults::pvc, no_validation)),
    res!(core::v1::Binding, NS, "binding", [], [], [], false, ops!(core::v1::Binding, "io.k8s.api.core.v1.Binding"), verbs = CREATE_ONLY),
    res!(core::v1::ComponentStatus, CLUSTER, "componentstatus", ["cs"], [], [], false, ops!(core::v1::ComponentStatus, "io.k8s.api.core.v1.ComponentStatus", no_defaults, no_validation, COMPONENTSTATUS_COLUMNS, componentstatus_cells), verbs = &["get", "list"]),
    res!(core::v1::PodTemplate, NS, "podtemplate", [], [], [], false, ops!(core::v1::PodTemplate, "io.k8s.api.core.v1.PodTemplate")),
    res!(core::v1::ReplicationController, NS, "replicationcontroller", ["rc"], ["all"], ["status", "scale"], true,
        ops!(core::v1::ReplicationController, "io.k8s.api.core.v1.ReplicationController", defaults::replicated, no_validation, REPLICASET_COLUMNS, replicaset_cells)),
    // apps/v1
    res!(apps::v1::Deployment, NS, "deployment", ["deploy"], ["all"], ["status", "scale"], true,
        ops!(apps::v1::Deployment, "io.k8s.api.apps.v1.Deployment", defaults::deployment, validate::workload, DEPLOYMENT_COLUMNS, deployment_cells,
            update = immutable::workload)),
    res!(apps::v1::StatefulSet, NS, "statefulset", ["sts"], ["all"], ["status", "scale"], true,
        ops!(apps::v1::StatefulSet, "io.k8s.api.apps.v1.StatefulSet", defaults::statefulset, validate::workload, STATEFULSET_COLUMNS, statefulset_cells,
            update = immutable::statefulset)),
    res!(apps::v1::DaemonSet, NS, "daemonset", ["ds"], ["all"], ["status"], true,
        ops!(apps::v1::DaemonSet, "io.k8s.api.apps.v1.DaemonSet", defaults::daemonset, validate::workload, &[], no_cells,
            update = immutable::workload)),
    res!(apps::v1::ReplicaSet, NS, "replicaset", ["rs"], ["all"], ["status", "scale"], true,
        ops!(apps::v1::ReplicaSet, "io.k8s.api.apps.v1.ReplicaSet", defaults::replicated, validate::workload, REPLICASET_COLUMNS, replicaset_cells,
            update = immutable::workload)),
    res!(apps::v1::ControllerRevision, NS, "controllerrevision", [], [], [], false, ops!(apps::v1::ControllerRevision, "io.k8s.api.apps.v1.ControllerRevision")),
    // batch/v1
    res!(batch::v1::Job, NS, "job", [], ["all"], ["status"], true,
        ops!(batch::v1::Job, "io.k8s.api.batch.v1.Job", defaults::job, validate::job, JOB_COLUMNS, job_cells, update = immutable::job)),
    res!(batch::v1::CronJob, NS, "cronjob", ["cj"], ["all"], ["status"], true,
        ops!(batch::v1::CronJob, "io.k8s.api.batch.v1.CronJob", defaults::cronjob, validate::cronjob, CRONJOB_COLUMNS, cronjob_cells)),
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
    res!(coordination::v1::Lease, NS, "lease", [], [], [], false, ops!(coordination::v1::Lease, "io.k8s.api.coordination.v1.Lease")),
    res!(discovery::v1::EndpointSlice, NS, "endpointslice", [], [], [], false, ops!(discovery::v1::EndpointSlice, "io.k8s.api.discovery.v1.EndpointSlice")),
    res!(events::v1::Event, NS, "event", [], [], [], false,
        ops!(events::v1::Event, "io.k8s.api.events.v1.Event", no_defaults, no_validation, EVENT_COLUMNS, event_cells)),
    res!(networking::v1::Ingress, NS, "ingress", ["ing"], [], ["status"], true, ops!(networking::v1::Ingress, "io.k8s.api.networking.v1.Ingress")),
    res!(networking::v1::IngressClass, CLUSTER, "ingressclass", [], [], [], false, ops!(networking::v1::IngressClass, "io.k8s.api.networking.v1.IngressClass")),
    res!(networking::v1::NetworkPolicy, NS, "networkpolicy", ["netpol"], [], [], true, ops!(networking::v1::NetworkPolicy, "io.k8s.api.networking.v1.NetworkPolicy")),
    res!(policy::v1::PodDisruptionBudget, NS, "poddisruptionbudget", ["pdb"], [], ["status"], true, ops!(policy::v1::PodDisruptionBudget, "io.k8s.api.policy.v1.PodDisruptionBudget")),
    res!(rbac::v1::Role, NS, "role", [], [], [], false, ops!(rbac::v1::Role, "io.k8s.api.rbac.v1.Role", no_defaults, validate::role)),
    res!(rbac::v1::RoleBinding, NS, "rolebinding", [], [], [], false, ops!(rbac::v1::RoleBinding, "io.k8s.api.rbac.v1.RoleBinding", no_defaults, validate::binding, &[], no_cells, update = immutable::role_ref)),
    res!(rbac::v1::ClusterRole, CLUSTER, "clusterrole", [], [], [], false, ops!(rbac::v1::ClusterRole, "io.k8s.api.rbac.v1.ClusterRole", no_defaults, validate::role)),
    res!(rbac::v1::ClusterRoleBinding, CLUSTER, "clusterrolebinding", [], [], [], false, ops!(rbac::v1::ClusterRoleBinding, "io.k8s.api.rbac.v1.ClusterRoleBinding", no_defaults, validate::binding, &[], no_cells, update = immutable::role_ref)),
    res!(scheduling::v1::PriorityClass, CLUSTER, "priorityclass", ["pc"], [], [], false, ops!(scheduling::v1::PriorityClass, "io.k8s.api.scheduling.v1.PriorityClass", defaults::priority_class, no_validation)),
    res!(storage::v1::StorageClass, CLUSTER, "storageclass", ["sc"], [], [], false, ops!(storage::v1::StorageClass, "io.k8s.api.storage.v1.StorageClass")),
    res!(storage::v1::CSIDriver, CLUSTER, "csidriver", [], [], [], false, ops!(storage::v1::CSIDriver, "io.k8s.api.storage.v1.CSIDriver")),
    res!(storage::v1::CSINode, CLUSTER, "csinode", [], [], [], false, ops!(storage::v1::CSINode, "io.k8s.api.storage.v1.CSINode")),
    res!(storage::v1::VolumeAttachment, CLUSTER, "volumeattachment", [], [], ["status"], false, ops!(storage::v1::VolumeAttachment, "io.k8s.api.storage.v1.VolumeAttachment")),
    res!(storage::v1::CSIStorageCapacity, NS, "csistoragecapacity", [], [], [], false, ops!(storage::v1::CSIStorageCapacity, "io.k8s.api.storage.v1.CSIStorageCapacity")),
    res!(storage::v1::VolumeAttributesClass, CLUSTER, "volumeattributesclass", ["vac"], [], [], false, ops!(storage::v1::VolumeAttributesClass, "io.k8s.api.storage.v1.VolumeAttributesClass")),
    res!(autoscaling::v2::HorizontalPodAutoscaler, NS, "horizontalpodautoscaler", ["hpa"], ["all"], ["status"], false,
        ops!(autoscaling::v2::HorizontalPodAutoscaler, "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", hpa::defaults, no_validation, HPA_COLUMNS, hpa_cells)),
    stored_as(
        res!(autoscaling::v1::HorizontalPodAutoscaler, NS, "horizontalpodautoscaler", ["hpa"], ["all"], ["status"], false,
            ops!(autoscaling::v1::HorizontalPodAutoscaler, "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", hpa::v1_defaults, no_validation, HPA_COLUMNS, hpa::v1_cells)),
        &hpa::V1_STORED_AS_V2,
    ),
    res!(certificates::v1::CertificateSigningRequest, CLUSTER, "certificatesigningrequest", ["csr"], [], ["approval", "status"], false,
        ops!(certificates::v1::CertificateSigningRequest, "io.k8s.api.certificates.v1.CertificateSigningRequest", no_defaults, no_validation, CSR_COLUMNS, csr_cells)),
    res!(flowcontrol::v1::FlowSchema, CLUSTER, "flowschema", [], [], ["status"], true, ops!(flowcontrol::v1::FlowSchema, "io.k8s.api.flowcontrol.v1.FlowSchema", no_defaults, no_validation, FLOWSCHEMA_COLUMNS, flowschema_cells)),
    res!(flowcontrol::v1::PriorityLevelConfiguration, CLUSTER, "prioritylevelconfiguration", [], [], ["status"], true,
        ops!(flowcontrol::v1::PriorityLevelConfiguration, "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration", no_defaults, no_validation, PRIORITYLEVEL_COLUMNS, prioritylevel_cells)),
    res!(node::v1::RuntimeClass, CLUSTER, "runtimeclass", [], [], [], false, ops!(node::v1::RuntimeClass, "io.k8s.api.node.v1.RuntimeClass", no_defaults, no_validation, RUNTIMECLASS_COLUMNS, runtimeclass_cells)),
    res!(networking::v1::IPAddress, CLUSTER, "ipaddress", ["ip"], [], [], false,
        ops!(networking::v1::IPAddress, "io.k8s.api.networking.v1.IPAddress", no_defaults, validate::ipaddress, IPADDRESS_COLUMNS, ipaddress_cells,
            update = immutable::ipaddress)),
    res!(networking::v1::ServiceCIDR, CLUSTER, "servicecidr", [], [], ["status"], false,
        ops!(networking::v1::ServiceCIDR, "io.k8s.api.networking.v1.ServiceCIDR", no_defaults, validate::servicecidr, SERVICECIDR_COLUMNS, servicecidr_cells,
            update = immutable::servicecidr)),
    res!(resource::v1::DeviceClass, CLUSTER, "deviceclass", [], [], [], true, ops!(resource::v1::DeviceClass, "io.k8s.api.resource.v1.DeviceClass")),
    res!(resource::v1::ResourceClaim, NS, "resourceclaim", [], [], ["status"], true, ops!(resource::v1::ResourceClaim, "io.k8s.api.resource.v1.ResourceClaim")),
    res!(resource::v1::ResourceClaimTemplate, NS, "resourceclaimtemplate", [], [], [], true, ops!(resource::v1::ResourceClaimTemplate, "io.k8s.api.resource.v1.ResourceClaimTemplate")),
    res!(resource::v1::ResourceSlice, CLUSTER, "resourceslice", [], [], [], true, ops!(resource::v1::ResourceSlice, "io.k8s.api.resource.v1.ResourceSlice")),
    // admission configuration
    res!(admissionregistration::v1::MutatingWebhookConfiguration, CLUSTER, "mutatingwebhookconfiguration", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::MutatingWebhookConfiguration, "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration", no_defaults, no_validation, WEBHOOK_CONFIGURATION_COLUMNS, webhook_configuration_cells)),
    res!(admissionregistration::v1::ValidatingWebhookConfiguration, CLUSTER, "validatingwebhookconfiguration", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::ValidatingWebhookConfiguration, "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration", no_defaults, no_validation, WEBHOOK_CONFIGURATION_COLUMNS, webhook_configuration_cells)),
    res!(admissionregistration::v1::ValidatingAdmissionPolicy, CLUSTER, "validatingadmissionpolicy", [], ["api-extensions"], ["status"], true,
        ops!(admissionregistration::v1::ValidatingAdmissionPolicy, "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy", no_defaults, no_validation, VALIDATING_POLICY_COLUMNS, validating_policy_cells)),
    res!(admissionregistration::v1::ValidatingAdmissionPolicyBinding, CLUSTER, "validatingadmissionpolicybinding", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1::ValidatingAdmissionPolicyBinding, "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding", no_defaults, no_validation, POLICY_BINDING_COLUMNS, policy_binding_cells)),
    gated(res!(admissionregistration::v1beta1::MutatingAdmissionPolicy, CLUSTER, "mutatingadmissionpolicy", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1beta1::MutatingAdmissionPolicy, "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicy", no_defaults, no_validation, MUTATING_POLICY_COLUMNS, mutating_policy_cells)),
        "MutatingAdmissionPolicy"),
    gated(res!(admissionregistration::v1beta1::MutatingAdmissionPolicyBinding, CLUSTER, "mutatingadmissionpolicybinding", [], ["api-extensions"], [], true,
        ops!(admissionregistration::v1beta1::MutatingAdmissionPolicyBinding, "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicyBinding", no_defaults, no_validation, POLICY_BINDING_COLUMNS, policy_binding_cells)),
        "MutatingAdmissionPolicy"),
    gated(stored_as(res!(mutating_policy::MutatingAdmissionPolicy, CLUSTER, "mutatingadmissionpolicy", [], ["api-extensions"], [], true,
        ops!(mutating_policy::MutatingAdmissionPolicy, "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicy", no_defaults, no_validation, MUTATING_POLICY_COLUMNS, mutating_policy_cells)),
        &mutating_policy::STORED_AS_V1BETA1), "MutatingAdmissionPolicy"),
    gated(stored_as(res!(mutating_policy::MutatingAdmissionPolicyBinding, CLUSTER, "mutatingadmissionpolicybinding", [], ["api-extensions"], [], true,
        ops!(mutating_policy::MutatingAdmissionPolicyBinding, "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicyBinding", no_defaults, no_validation, POLICY_BINDING_COLUMNS, policy_binding_cells)),
        &mutating_policy::STORED_AS_V1BETA1), "MutatingAdmissionPolicy"),
    res!(apiextensions::v1::CustomResourceDefinition, CLUSTER, "customresourcedefinition", ["crd", "crds"], ["api-extensions"], ["status"], false,
        ops!(apiextensions::v1::CustomResourceDefinition, "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            crate::crd::definition::defaults, crate::crd::definition::validate)),
    res!(apiregistration::v1::APIService, CLUSTER, "apiservice", [], ["api-extensions"], ["status"], false,
        ops!(apiregistration::v1::APIService, "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService", apiservice::defaults, apiservice::validate, APISERVICE_COLUMNS, apiservice_cells)),
];
