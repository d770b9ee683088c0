/** Where the tools keep their state ({@code .butterfly/}), and the API keys {@code up} makes there. */
package io.butterfly.cli.home;
