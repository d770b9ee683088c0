package io.butterfly.coordinator.control;

import org.junit.jupiter.api.AfterEach;

/** The in-memory control log keeps the control log's contract. */
class InMemoryControlLogTest extends ControlLogContract {

    private final InMemoryControlLog control = new InMemoryControlLog();

    @Override
    protected ControlLog control() {
        return control;
    }

    @AfterEach
    void close() {
        control.close();
    }
}
