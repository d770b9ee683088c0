package io.butterfly.common.tls;

import java.security.KeyStore;
import java.security.Provider;
import javax.net.ssl.ManagerFactoryParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.TrustManagerFactorySpi;

/** A trust manager factory that hands out one given trust manager (for APIs that take a factory, as Spring's SSL bundles). */
final class FixedTrustManagerFactory extends TrustManagerFactory {

    private static final Provider PROVIDER = new Provider("butterfly-cluster-trust", "1.0", "the cluster CA's trust manager") {
    };

    FixedTrustManagerFactory(TrustManager manager) {
        super(new TrustManagerFactorySpi() {
            @Override
            protected void engineInit(KeyStore ks) {
            }

            @Override
            protected void engineInit(ManagerFactoryParameters spec) {
            }

            @Override
            protected TrustManager[] engineGetTrustManagers() {
                return new TrustManager[] {manager};
            }
        }, PROVIDER, "cluster");
    }
}
