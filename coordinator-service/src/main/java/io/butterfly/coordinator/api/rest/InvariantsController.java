package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.control.InvariantMonitor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** The invariants of docs/state-machines.md §3.3 as last checked (§7.4): an empty list means all hold. */
@RestController
@RequestMapping("/api/v1/system")
public class InvariantsController {

    private final InvariantMonitor monitor;

    public InvariantsController(InvariantMonitor monitor) {
        this.monitor = monitor;
    }

    @GetMapping("/invariants")
    public Map<String, Object> invariants() {
        InvariantMonitor.Report r = monitor.report();
        List<Map<String, Object>> violations = r.violations().stream().map(v -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("invariant", v.invariant().name());
            m.put("message", v.message());
            m.put("since", v.since().toString());
            m.put("checks", v.checks());
            return m;
        }).toList();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("checked_at", r.checkedAt() == null ? null : r.checkedAt().toString());
        out.put("holds", violations.isEmpty());
        out.put("violations", violations);
        return out;
    }
}
