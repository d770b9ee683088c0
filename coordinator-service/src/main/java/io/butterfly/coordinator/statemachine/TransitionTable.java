package io.butterfly.coordinator.statemachine;

import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * A state machine's legal transitions (exactly the spec's table) plus its explicitly forbidden ones. Anything not
 * in the table is illegal; the forbidden list only adds the spec's reason to the rejection.
 */
public final class TransitionTable<S extends Enum<S>> {

    private final String machine;
    private final Class<S> type;
    private final S initial;
    private final List<Transition<S>> transitions;
    private final List<ForbiddenTransition<S>> forbidden;

    public TransitionTable(String machine, Class<S> type, S initial, List<Transition<S>> transitions,
            List<ForbiddenTransition<S>> forbidden) {
        this.machine = machine;
        this.type = type;
        this.initial = initial;
        this.transitions = List.copyOf(transitions);
        this.forbidden = List.copyOf(forbidden);
        for (Transition<S> t : transitions) {
            forbiddenReason(t.from(), t.to()).ifPresent(r -> {
                throw new IllegalArgumentException(machine + ": " + t + " is both legal and forbidden");
            });
        }
    }

    public String machine() {
        return machine;
    }

    public Class<S> type() {
        return type;
    }

    public S initial() {
        return initial;
    }

    public List<Transition<S>> transitions() {
        return transitions;
    }

    public List<ForbiddenTransition<S>> forbidden() {
        return forbidden;
    }

    public boolean isAllowed(S from, S to) {
        return find(from, to).isPresent();
    }

    /** The legal transition from -> to; throws naming machine, states and the spec's reason otherwise. */
    public Transition<S> check(S from, S to) {
        return find(from, to).orElseThrow(
                () -> new IllegalTransitionException(machine, from, to, forbiddenReason(from, to).orElse(null)));
    }

    public Optional<String> forbiddenReason(S from, S to) {
        return forbidden.stream().filter(f -> f.matches(from, to)).map(ForbiddenTransition::reason).findFirst();
    }

    private Optional<Transition<S>> find(S from, S to) {
        return transitions.stream().filter(t -> t.from() == from && t.to() == to).findFirst();
    }

    /** Mermaid {@code stateDiagram-v2} text (docs/state-machines.md §7.3) generated from the table. */
    public String mermaid() {
        StringBuilder sb = new StringBuilder("stateDiagram-v2\n");
        sb.append("    %% ").append(machine).append('\n');
        sb.append("    [*] --> ").append(initial.name()).append('\n');
        sb.append(transitions.stream()
                .map(t -> "    " + t.from().name() + " --> " + t.to().name() + " : " + t.trigger())
                .collect(Collectors.joining("\n")));
        sb.append('\n');
        return sb.toString();
    }
}
