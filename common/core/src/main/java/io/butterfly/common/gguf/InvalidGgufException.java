package io.butterfly.common.gguf;

/** A file that is not valid GGUF, or holds something Butterfly cannot serve (the message says which). */
public class InvalidGgufException extends IllegalArgumentException {

    public InvalidGgufException(String message) {
        super(message);
    }
}
