/**
 * Files the tools write: models ({@code model generate}, with the model generator) and publisher keys
 * ({@code keygen}).
 */
package io.butterfly.cli.generate;
