package io.butterfly.it;

import static io.butterfly.it.ChartManifests.at;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Kubernetes' Pod Security Standards, {@code restricted} profile (the baseline's rules and the restricted ones, as
 * the Pod Security admission controller checks them), plus what Butterfly asks of its pods besides: a read-only root
 * file system, and CPU and memory requests and limits on every container. {@link #violations} lists each broken rule
 * of one pod template, naming the container and the field.
 */
final class RestrictedPodSecurity {

    /** Volume types the restricted profile allows. */
    private static final Set<String> VOLUME_TYPES = Set.of("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
            "persistentVolumeClaim", "projected", "secret");
    private static final Set<String> SECCOMP = Set.of("RuntimeDefault", "Localhost");
    /** Sysctls the baseline profile allows. */
    private static final Set<String> SAFE_SYSCTLS = Set.of("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
            "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
            "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes");
    private static final Set<String> SELINUX_TYPES = Set.of("container_t", "container_init_t", "container_kvm_t",
            "container_engine_t");

    private RestrictedPodSecurity() {
    }

    /** Every rule the pod template of {@code workload} (a StatefulSet, Deployment, ...) breaks. */
    @SuppressWarnings("unchecked")
    static List<String> violations(Map<String, Object> workload) {
        String name = ChartManifests.name(workload);
        Map<String, Object> pod = (Map<String, Object>) at(workload, "spec", "template", "spec");
        List<String> out = new ArrayList<>();
        Map<String, Object> podContext = map(pod.get("securityContext"));

        for (String host : List.of("hostNetwork", "hostPID", "hostIPC")) {
            if (Boolean.TRUE.equals(pod.get(host))) {
                out.add(name + ": spec." + host + " must be false");
            }
        }
        for (Map<String, Object> v : maps(pod.get("volumes"))) {
            String type = v.keySet().stream().filter(k -> !k.equals("name")).findFirst().orElse("?");
            if (!VOLUME_TYPES.contains(type)) {
                out.add(name + ": volume " + v.get("name") + " is a " + type + " volume");
            }
        }
        for (Map<String, Object> s : maps(podContext.get("sysctls"))) {
            if (!SAFE_SYSCTLS.contains(String.valueOf(s.get("name")))) {
                out.add(name + ": securityContext.sysctls " + s.get("name") + " is not a safe sysctl");
            }
        }
        checkShared(name + " (pod)", podContext, out);
        if (Objects.equals(podContext.get("runAsUser"), 0)) {
            out.add(name + ": securityContext.runAsUser must not be 0");
        }

        List<Map<String, Object>> containers = new ArrayList<>(maps(pod.get("initContainers")));
        containers.addAll(maps(pod.get("containers")));
        containers.addAll(maps(pod.get("ephemeralContainers")));
        for (Map<String, Object> c : containers) {
            String where = name + " container " + c.get("name");
            Map<String, Object> sc = map(c.get("securityContext"));
            checkShared(where, sc, out);
            if (!Boolean.TRUE.equals(sc.get("runAsNonRoot")) && !Boolean.TRUE.equals(podContext.get("runAsNonRoot"))) {
                out.add(where + ": runAsNonRoot must be true (on the container or the pod)");
            }
            if (Objects.equals(sc.get("runAsUser"), 0)) {
                out.add(where + ": securityContext.runAsUser must not be 0");
            }
            Object seccomp = at(sc, "seccompProfile", "type");
            Object podSeccomp = at(podContext, "seccompProfile", "type");
            if (!SECCOMP.contains(seccomp == null ? podSeccomp : seccomp)) {
                out.add(where + ": seccompProfile.type must be RuntimeDefault or Localhost (on the container or the pod)");
            }
            if (!Boolean.FALSE.equals(sc.get("allowPrivilegeEscalation"))) {
                out.add(where + ": securityContext.allowPrivilegeEscalation must be false");
            }
            if (Boolean.TRUE.equals(sc.get("privileged"))) {
                out.add(where + ": securityContext.privileged must be false");
            }
            List<Object> drop = list(at(sc, "capabilities", "drop"));
            if (!drop.contains("ALL")) {
                out.add(where + ": securityContext.capabilities.drop must contain ALL");
            }
            for (Object added : list(at(sc, "capabilities", "add"))) {
                if (!"NET_BIND_SERVICE".equals(added)) {
                    out.add(where + ": securityContext.capabilities.add may hold NET_BIND_SERVICE only, not " + added);
                }
            }
            if (sc.get("procMount") != null && !"Default".equals(sc.get("procMount"))) {
                out.add(where + ": securityContext.procMount must be Default");
            }
            for (Map<String, Object> p : maps(c.get("ports"))) {
                if (p.get("hostPort") != null && !Objects.equals(p.get("hostPort"), 0)) {
                    out.add(where + ": port " + p.get("name") + " must not use a hostPort");
                }
            }
            if (!Boolean.TRUE.equals(sc.get("readOnlyRootFilesystem"))) {
                out.add(where + ": securityContext.readOnlyRootFilesystem must be true");
            }
            for (String kind : List.of("requests", "limits")) {
                for (String resource : List.of("cpu", "memory")) {
                    if (at(c, "resources", kind, resource) == null) {
                        out.add(where + ": resources." + kind + "." + resource + " must be set");
                    }
                }
            }
        }
        return out;
    }

    /** The rules a pod's and a container's security context share (baseline: SELinux, AppArmor, Windows). */
    private static void checkShared(String where, Map<String, Object> sc, List<String> out) {
        Object selinuxType = at(sc, "seLinuxOptions", "type");
        if (selinuxType != null && !SELINUX_TYPES.contains(selinuxType)) {
            out.add(where + ": seLinuxOptions.type " + selinuxType + " is not allowed");
        }
        if (at(sc, "seLinuxOptions", "user") != null || at(sc, "seLinuxOptions", "role") != null) {
            out.add(where + ": seLinuxOptions.user and .role must not be set");
        }
        Object appArmor = at(sc, "appArmorProfile", "type");
        if (appArmor != null && !Set.of("RuntimeDefault", "Localhost").contains(appArmor)) {
            out.add(where + ": appArmorProfile.type must be RuntimeDefault or Localhost");
        }
        if ("Unconfined".equals(at(sc, "seccompProfile", "type"))) {
            out.add(where + ": seccompProfile.type must not be Unconfined");
        }
        if (Boolean.TRUE.equals(at(sc, "windowsOptions", "hostProcess"))) {
            out.add(where + ": windowsOptions.hostProcess must be false");
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return o instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return o instanceof List<?> l ? (List<Object>) l : List.of();
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> maps(Object o) {
        return o instanceof List<?> l ? (List<Map<String, Object>>) l : List.of();
    }
}
