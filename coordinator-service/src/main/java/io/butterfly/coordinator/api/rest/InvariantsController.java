package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.InvariantsReport;
import io.butterfly.coordinator.control.InvariantMonitor;
import java.util.List;
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
    public InvariantsReport invariants() {
        InvariantMonitor.Report r = monitor.report();
        List<InvariantsReport.Violation> violations = r.violations().stream().map(v -> new InvariantsReport.Violation(
                v.invariant().name(), v.message(), v.since().toString(), v.checks())).toList();
        return new InvariantsReport(r.checkedAt() == null ? null : r.checkedAt().toString(), violations.isEmpty(),
                violations);
    }
}
