package io.butterfly.coordinator.api.rest;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.asyncDispatch;

import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.RequestBuilder;

/**
 * A request to controllers that answer later (a future of the answer, or of an event stream), followed to its end
 * as a servlet container would: the future's value is dispatched, and a stream is read until it completes.
 */
public final class AsyncMvc {

    private AsyncMvc() {
    }

    public static MockHttpServletResponse perform(MockMvc mvc, RequestBuilder request) throws Exception {
        MvcResult r = mvc.perform(request).andReturn();
        if (!r.getRequest().isAsyncStarted()) {
            return r.getResponse();
        }
        r.getAsyncResult(20_000);
        MvcResult dispatched = mvc.perform(asyncDispatch(r)).andReturn();
        if (dispatched.getRequest().isAsyncStarted()) {
            dispatched.getAsyncResult(20_000); // an event stream: until it completes
        }
        return dispatched.getResponse();
    }
}
