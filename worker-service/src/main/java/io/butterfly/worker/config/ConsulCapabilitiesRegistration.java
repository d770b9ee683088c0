package io.butterfly.worker.config;

import io.butterfly.worker.capability.Capabilities;
import io.butterfly.worker.capability.CapabilityProbe;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.cloud.consul.serviceregistry.ConsulRegistration;
import org.springframework.cloud.consul.serviceregistry.ConsulServiceRegistry;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import tools.jackson.databind.json.JsonMapper;

/**
 * Under the {@code consul} profile only: the worker registers in Consul as soon as its web server is up; once
 * its capabilities are measured ({@link CapabilityProbe}), this adds them to the registration's metadata
 * ({@code capabilities}, JSON in the proto's field names, so discovery's consul backend reads them) and
 * registers again, which updates the entry the Consul UI shows.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "spring.cloud.consul.enabled", havingValue = "true")
public class ConsulCapabilitiesRegistration {

    private static final Logger log = LoggerFactory.getLogger(ConsulCapabilitiesRegistration.class);
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final CapabilityProbe capabilities;
    private final ObjectProvider<ConsulRegistration> registration;
    private final ObjectProvider<ConsulServiceRegistry> registry;

    public ConsulCapabilitiesRegistration(CapabilityProbe capabilities, ObjectProvider<ConsulRegistration> registration,
                                          ObjectProvider<ConsulServiceRegistry> registry) {
        this.capabilities = capabilities;
        this.registration = registration;
        this.registry = registry;
    }

    @EventListener(ApplicationReadyEvent.class)
    public void publishOnceMeasured() {
        ConsulRegistration reg = registration.getIfAvailable();
        ConsulServiceRegistry consul = registry.getIfAvailable();
        if (reg == null || consul == null) {
            return; // registration is off (spring.cloud.consul.discovery.register=false)
        }
        // A detection that fails is reported by the join; the registration then keeps no capabilities.
        capabilities.measured().thenAcceptAsync(caps -> {
            Map<String, String> meta = new HashMap<>(reg.getService().getMeta() == null ? Map.of() : reg.getService().getMeta());
            meta.put("capabilities", summary(caps));
            reg.getService().setMeta(meta);
            try {
                consul.register(reg);
            } catch (RuntimeException e) {
                log.warn("could not add capabilities to the Consul registration: {}", e.toString());
            }
        });
    }

    /** The capabilities as compact JSON with the proto's field names (Consul metadata values hold up to 512 chars). */
    static String summary(Capabilities c) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("cpu_cores", c.cpuCores());
        out.put("memory_bytes", Long.toString(c.memoryBytes())); // proto JSON writes 64-bit integers as strings
        out.put("measured_gflops", c.measuredGflops());
        out.put("memory_bandwidth_gbps", c.memoryBandwidthGbps());
        out.put("storage_type", c.storageType().name());
        out.put("device", c.device());
        out.put("gpu_count", c.gpus().size()); // a count only: the full GPU list would not fit
        out.put("weight_bytes", c.weightBytes());
        return JSON.writeValueAsString(out);
    }
}
