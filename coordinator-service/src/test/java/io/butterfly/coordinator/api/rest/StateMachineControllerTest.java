package io.butterfly.coordinator.api.rest;

import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.startsWith;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.control.InMemoryControlLog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;

class StateMachineControllerTest {

    private final InMemoryControlLog control = new InMemoryControlLog();
    private final MockMvc mvc = MockMvcBuilders.standaloneSetup(new StateMachineController(control))
            .setControllerAdvice(new ProblemHandler()).build();

    @AfterEach
    void tearDown() {
        control.close();
    }

    @Test
    void diagramIsMermaidGeneratedFromTheTable() throws Exception {
        mvc.perform(get("/api/v1/system/diagram"))
                .andExpect(status().isOk())
                .andExpect(content().contentTypeCompatibleWith("text/vnd.mermaid"))
                .andExpect(content().string(startsWith("stateDiagram-v2\n")))
                .andExpect(content().string(containsString("UNINITIALIZED --> BOOTSTRAPPING : bootstrap()")))
                .andExpect(content().string(containsString("COMMITTING --> READY : result_committed()")));
        mvc.perform(get("/api/v1/system/diagram").param("machine", "worker"))
                .andExpect(status().isOk())
                .andExpect(content().string(containsString("SUSPECT --> FAILED : confirm_failure()")));
        mvc.perform(get("/api/v1/system/diagram").param("machine", "nope")).andExpect(status().isBadRequest())
                .andExpect(content().contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.title").value("Invalid request"))
                .andExpect(jsonPath("$.status").value(400))
                .andExpect(jsonPath("$.detail").value(startsWith("unknown machine 'nope'; one of system, ")))
                .andExpect(jsonPath("$.instance").value("/api/v1/system/diagram"))
                .andExpect(jsonPath("$.field").value("machine"));
    }

    /** What the dashboard draws: the same table as the diagram, with the deviations the reducer also makes. */
    @Test
    void machineIsTheTableAsJson() throws Exception {
        mvc.perform(get("/api/v1/system/machines/system"))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.initial").value("UNINITIALIZED"))
                .andExpect(jsonPath("$.states[0]").value("UNINITIALIZED"))
                .andExpect(jsonPath("$.states.length()").value(8))
                .andExpect(jsonPath("$.transitions.length()").value(11))
                .andExpect(jsonPath("$.transitions[0].from").value("UNINITIALIZED"))
                .andExpect(jsonPath("$.transitions[0].to").value("BOOTSTRAPPING"))
                .andExpect(jsonPath("$.transitions[0].trigger").value("bootstrap()"))
                .andExpect(jsonPath("$.deviations[0].from").value("READY"))
                .andExpect(jsonPath("$.deviations[0].to").value("DEGRADED"));
        mvc.perform(get("/api/v1/system/machines/worker"))
                .andExpect(jsonPath("$.deviations.length()").value(0));
        mvc.perform(get("/api/v1/system/machines/nope")).andExpect(status().isBadRequest())
                .andExpect(content().contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.title").value("Invalid request"))
                .andExpect(jsonPath("$.field").value("machine"));
    }

    @Test
    void transitionsListAppliedTransitionsNewestFirst() throws Exception {
        control.submit(new ClusterCommand.Bootstrap("m", 1, 10));
        control.submit(new ClusterCommand.Shutdown("bye", 20));
        mvc.perform(get("/api/v1/system/transitions").param("limit", "1"))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.transitions.length()").value(1))
                .andExpect(jsonPath("$.transitions[0].machine").value("system"))
                .andExpect(jsonPath("$.transitions[0].from").value("BOOTSTRAPPING"))
                .andExpect(jsonPath("$.transitions[0].to").value("SHUTDOWN"))
                .andExpect(jsonPath("$.transitions[0].trigger").value("Shutdown"))
                // camelCase on the wire, as the dashboard reads them
                .andExpect(jsonPath("$.transitions[0].entityId").value("cluster"))
                .andExpect(jsonPath("$.transitions[0].epoch").isNumber())
                .andExpect(jsonPath("$.transitions[0].logIndex").isNumber())
                .andExpect(jsonPath("$.transitions[0].atMs").isNumber());
        mvc.perform(get("/api/v1/system/transitions"))
                .andExpect(jsonPath("$.transitions.length()").value(2))
                .andExpect(jsonPath("$.transitions[1].to").value("BOOTSTRAPPING"));
        mvc.perform(get("/api/v1/system/transitions").param("limit", "0"))
                .andExpect(status().isBadRequest())
                .andExpect(content().contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.title").value("Bad Request"))
                .andExpect(jsonPath("$.detail").value("limit must be between 1 and 1000, was 0"))
                .andExpect(jsonPath("$.instance").value("/api/v1/system/transitions"))
                .andExpect(jsonPath("$.field").value("limit"));
    }
}
