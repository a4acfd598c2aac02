//go:build !mlwarden_sbatch

package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Job is a Kubernetes Indexed Job that runs one shard of a sweep per pod:
// the target list is listed once, here, and handed to every pod in a
// ConfigMap (so that every pod splits the same list, and the shards add up
// to it exactly), with the config file in effect; pod N runs `mlwarden
// sweep @targets.txt --shards M` with JOB_COMPLETION_INDEX=N.
type Job struct {
	Name, Namespace string
	// Image is the mlwarden image the pods run.
	Image string
	// Shards is the Job's completions; Parallelism how many run at once
	// (0: all).
	Shards, Parallelism int
	// Targets is the list the pods split.
	Targets []string
	// Args are further arguments of every pod's sweep (the scan settings
	// the user set, as --name=value).
	Args []string
	// Config is the content of the config file in effect (nil: none).
	Config []byte
	// Secret names a Secret whose keys become the pods' environment
	// (a cache URL with its password, HF_TOKEN).
	Secret string
	// PVC names a PersistentVolumeClaim mounted at /reports, where each
	// pod writes its shard's JSON report.
	PVC string
}

// Where the pods find what the ConfigMap holds, and write.
const (
	JobListDir    = "/etc/mlwarden-sweep"
	JobReportsDir = "/reports"
	// maxConfigMap is what a ConfigMap may hold, with room for keys.
	maxConfigMap = 1000 << 10
)

// Objects returns the ConfigMap and the Job.
func (j Job) Objects() (*corev1.ConfigMap, *batchv1.Job, error) {
	if j.Shards < 1 {
		return nil, nil, fmt.Errorf("the job needs --shards of at least 1")
	}
	if j.Name == "" || j.Image == "" {
		return nil, nil, fmt.Errorf("the job needs a name and an image")
	}
	list := strings.Join(j.Targets, "\n") + "\n"
	if len(list)+len(j.Config) > maxConfigMap {
		return nil, nil, fmt.Errorf("%d targets do not fit in one ConfigMap (1 MiB): split the sweep into several jobs", len(j.Targets))
	}
	labels := map[string]string{"app.kubernetes.io/name": "mlwarden", "app.kubernetes.io/component": "sweep", "app.kubernetes.io/instance": j.Name}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace, Labels: labels},
		Data:       map[string]string{"targets.txt": list},
	}
	args := []string{"sweep", "@" + JobListDir + "/targets.txt", "--shards", strconv.Itoa(j.Shards), "--fail-on", "none", "--quiet"}
	if j.Config != nil {
		cm.Data["config.yaml"] = string(j.Config)
		args = append(args, "--config", JobListDir+"/config.yaml")
	}
	mounts := []corev1.VolumeMount{
		{Name: "list", MountPath: JobListDir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	volumes := []corev1.Volume{
		{Name: "list", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: j.Name}}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if j.PVC != "" {
		args = append(args, "--report-dir", JobReportsDir)
		mounts = append(mounts, corev1.VolumeMount{Name: "reports", MountPath: JobReportsDir})
		volumes = append(volumes, corev1.Volume{Name: "reports", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: j.PVC}}})
	}
	args = append(args, j.Args...)
	var envFrom []corev1.EnvFromSource
	if j.Secret != "" {
		envFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: j.Secret}}}}
	}
	indexed := batchv1.IndexedCompletion
	completions := int32(j.Shards)
	parallelism := completions
	if j.Parallelism > 0 && j.Parallelism < j.Shards {
		parallelism = int32(j.Parallelism)
	}
	perIndex := int32(2) // a shard whose pod fails (exit 2: not scanned in full) is retried twice, alone
	ttl := int32(7 * 24 * 3600)
	yes, no := true, false
	uid := int64(65532)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode:          &indexed,
			Completions:             &completions,
			Parallelism:             &parallelism,
			BackoffLimitPerIndex:    &perIndex,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: &no,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:    "sweep",
						Image:   j.Image,
						Args:    args,
						EnvFrom: envFrom,
						// The fs cache and spooled files go to /tmp.
						Env: []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}, {Name: "XDG_CACHE_HOME", Value: "/tmp/cache"}, {Name: "TMPDIR", Value: "/tmp"}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
						},
						VolumeMounts: mounts,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes: volumes,
				},
			},
		},
	}
	return cm, job, nil
}

// Manifest is the ConfigMap and the Job as one YAML stream, for kubectl
// apply -f -.
func (j Job) Manifest() ([]byte, error) {
	cm, job, err := j.Objects()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString("# mlwarden sweep: " + strconv.Itoa(len(j.Targets)) + " targets in " + strconv.Itoa(j.Shards) + " shards.\n")
	out.WriteString("# Apply with kubectl apply -f -; merge the shards' reports with mlwarden sweep merge.\n")
	for i, obj := range []any{cm, job} {
		if i > 0 {
			out.WriteString("---\n")
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		var n yaml.Node
		if err := yaml.Unmarshal(data, &n); err != nil {
			return nil, err
		}
		clearStyle(&n)
		enc := yaml.NewEncoder(&out)
		enc.SetIndent(2)
		if err := enc.Encode(&n); err != nil {
			return nil, err
		}
		enc.Close()
	}
	return out.Bytes(), nil
}

// clearStyle turns JSON's flow style into YAML's block style, keeping
// strings that would read as another type quoted.
func clearStyle(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!str" && n.Style == yaml.DoubleQuotedStyle {
			n.Style = 0
			if strings.Contains(n.Value, "\n") {
				n.Style = yaml.LiteralStyle
			}
		}
		return
	}
	n.Style = 0
	for _, c := range n.Content {
		clearStyle(c)
	}
}
