package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.StateMachineTable;
import io.butterfly.common.api.TransitionHistory;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.statemachine.StateMachines;
import io.butterfly.coordinator.statemachine.SystemDeviations;
import io.butterfly.coordinator.statemachine.TransitionTable;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.ErrorResponseException;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** Transition history (docs/state-machines.md §7.2) and the Mermaid diagrams generated from the transition tables (§7.3). */
@RestController
@RequestMapping("/api/v1/system")
public class StateMachineController {

    static final int MAX_LIMIT = 1000;

    private final ControlLog control;

    public StateMachineController(ControlLog control) {
        this.control = control;
    }

    @GetMapping("/transitions")
    public TransitionHistory transitions(@RequestParam(name = "limit", defaultValue = "100") int limit) {
        if (limit < 1 || limit > MAX_LIMIT) {
            ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST,
                    "limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
            problem.setProperty("field", "limit");
            throw new ErrorResponseException(HttpStatus.BAD_REQUEST, problem, null);
        }
        return new TransitionHistory(control.transitions(limit).stream()
                .map(t -> new TransitionHistory.Transition(t.machine(), t.entityId(), t.from(), t.to(), t.trigger(),
                        t.epoch(), t.logIndex(), t.atMs()))
                .toList());
    }

    /**
     * One machine's states and legal transitions as JSON, for a client that draws the diagram itself (the dashboard):
     * {@code machine}, {@code initial}, {@code states} in their declared order, {@code transitions} (from, to, trigger)
     * and, for the system machine, the {@code deviations} the reducer also makes (from, to, reason).
     */
    @GetMapping("/machines/{machine}")
    public StateMachineTable machine(@PathVariable("machine") String machine) {
        for (TransitionTable<?> table : StateMachines.ALL) {
            if (table.machine().equals(machine)) {
                return table(table);
            }
        }
        throw unknownMachine(machine);
    }

    /** One machine's diagram ({@code ?machine=worker}) or, by default, the system machine's. */
    @GetMapping("/diagram")
    public ResponseEntity<String> diagram(@RequestParam(name = "machine", defaultValue = "system") String machine) {
        for (TransitionTable<?> table : StateMachines.ALL) {
            if (table.machine().equals(machine)) {
                return ResponseEntity.ok().contentType(MediaType.parseMediaType("text/vnd.mermaid"))
                        .body(table.mermaid());
            }
        }
        throw unknownMachine(machine);
    }

    private static StateMachineTable table(TransitionTable<?> table) {
        List<StateMachineTable.Deviation> deviations = table != StateMachines.SYSTEM ? List.of()
                : SystemDeviations.ALLOWED.stream()
                        .map(d -> new StateMachineTable.Deviation(d.from().name(), d.to().name(), d.reason())).toList();
        return new StateMachineTable(table.machine(), table.initial().name(),
                Arrays.stream(table.type().getEnumConstants()).map(Enum::name).toList(),
                table.transitions().stream()
                        .map(t -> new StateMachineTable.Edge(t.from().name(), t.to().name(), t.trigger())).toList(),
                deviations);
    }

    /** 400 naming the field, as the problem handler answers it (docs/errors.md). */
    private static ErrorResponseException unknownMachine(String machine) {
        String known = StateMachines.ALL.stream().map(TransitionTable::machine).collect(Collectors.joining(", "));
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST,
                "unknown machine '" + machine + "'; one of " + known);
        problem.setTitle("Invalid request");
        problem.setProperty("field", "machine");
        return new ErrorResponseException(HttpStatus.BAD_REQUEST, problem, null);
    }
}
